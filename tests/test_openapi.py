"""Schemathesis against /api/openapi.json: no 500, and every response as the document says."""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from memory_admin import catalog
from memory_admin.models import MemoryStore
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Per operation and mode, derandomized so that CI is repeatable; the whole run takes well under a minute.
SETTINGS = {
    "max_examples": 12,
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": list(HealthCheck),
}


@pytest.fixture
def every_source(settings, bub_home: Path, bub_samples: Path, memory_sources: dict[str, Path]) -> None:
    """Throwaway copies of the Bub tapes and every family's memory, indexed; writes may go anywhere."""
    settings.TAPEVIEW_SOURCES += f",home=bub:{bub_home},samples=bub:{bub_samples}"
    discovery.sync()
    catalog.sync_stores()
    settings.TAPEVIEW_REFRESH_SECONDS = 3600  # indexed above: requests need not look at the folders again


@pytest.fixture
def keep_connection():
    """Calls go straight to the WSGI app, which closes the database connection after each request
    (as a real server should); inside a test's transaction that would close the test's own
    connection on PostgreSQL. Django's test client avoids it the same way."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(every_source, keep_connection, read_token: str):
    return schemathesis.openapi.from_wsgi(
        "/api/openapi.json", get_wsgi_application(), headers={"Authorization": f"Bearer {read_token}"}
    )


def real_ids(case) -> None:
    """Most generated ids, positions and versions are unknown (404, 409): make most of them real."""
    params = case.path_parameters or {}
    for name, model in (("tape_id", Tape), ("store_id", MemoryStore)):
        if isinstance(params.get(name), str):
            keys = list(model.objects.order_by("pk").values_list("key", flat=True))
            pick = sum(params[name].encode()) % (len(keys) + 1)
            if pick < len(keys):
                params[name] = keys[pick]
    query = case.query if isinstance(case.query, dict) else {}
    tape_keys = list(Tape.objects.order_by("pk").values_list("key", flat=True))
    for name in ("a", "b"):  # GET /api/compare's two tapes
        if isinstance(query.get(name), str):
            pick = sum(query[name].encode()) % (len(tape_keys) + 1)
            if pick < len(tape_keys):
                query[name] = tape_keys[pick]
    if isinstance(params.get("pos"), int) and not isinstance(params["pos"], bool):
        params["pos"] %= 120  # the sample tapes have up to 97 lines
    body = case.body if isinstance(case.body, dict) else {}
    store = MemoryStore.objects.filter(key=params.get("store_id", "")).first()
    odd = len(str(body.get("content"))) % 2
    if store is not None and isinstance(body.get("base_version"), str) and odd:
        body["base_version"] = store.version


def fuzz(operation, mode: GenerationMode, token: str) -> None:
    @given(case=operation.as_strategy(mode))
    @settings(**SETTINGS)
    def check(case) -> None:
        real_ids(case)
        case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)

    check()


def test_the_api_answers_every_request_as_its_schema_says(
    api_schema, read_token: str, write_token: str
) -> None:
    # One loop rather than schemathesis' pytest plugin, which does not run on pytest 9 yet.
    failures: dict[str, BaseException] = {}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 17
    for operation in operations:
        # Reads with a read token; writes with a write token, on the throwaway copies of every_source.
        token = read_token if operation.method.upper() == "GET" else write_token
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            try:
                fuzz(operation, mode, token)
            # A check's failure is an exception group; every operation's failures are reported together.
            except (Exception, BaseExceptionGroup) as exc:
                failures[f"{mode.value} {operation.label}"] = exc
    assert not failures, "\n\n".join(f"{name}:\n{exc}" for name, exc in failures.items())
