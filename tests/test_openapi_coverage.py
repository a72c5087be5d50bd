"""Schemathesis' coverage cases (each parameter at its bounds, its formats, missing, of the wrong type)
against /api/openapi.json: no 500, every status and body as the document says."""

from __future__ import annotations

import pytest
import schemathesis
from schemathesis import GenerationMode

from .test_openapi import CHECKS, api_schema, every_source, keep_connection, real_ids

__all__ = ["api_schema", "every_source", "keep_connection"]  # the fixtures this test shares

pytestmark = pytest.mark.django_db

# Per operation and mode, spread over its cases: about 600 calls, well under a minute on one core.
CASES = 10


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx: schemathesis.SerializationContext, value: object) -> dict:
    """A review import's body (JSON lines) as the generated text; its schema says only "a string"."""
    return {"data": value if isinstance(value, bytes) else str(value).encode()}


def spread(cases: list, most: int) -> list:
    step = max(1, len(cases) // most)
    return cases[::step][:most]


def test_the_coverage_cases_are_answered_as_the_schema_says(
    api_schema, read_token: str, write_token: str
) -> None:
    failures: dict[str, BaseException] = {}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 17
    calls = 0
    for operation in operations:
        token = read_token if operation.method.upper() == "GET" else write_token
        config = api_schema.config.generation_for(operation=operation)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            cases = list(
                api_schema.iter_coverage_cases(operation, generation_modes=[mode], generation_config=config)
            )
            for case in spread(cases, CASES):
                real_ids(case)
                calls += 1
                try:
                    case.call_and_validate(headers={"Authorization": f"Bearer {token}"}, checks=CHECKS)
                except (Exception, BaseExceptionGroup) as exc:
                    failures.setdefault(f"{mode.value} {operation.label}", exc)
    assert calls >= 300
    assert not failures, "\n\n".join(f"{name}:\n{exc}" for name, exc in failures.items())
