"""Who may call the API: tokens and sessions, scopes and roles, and the one error shape."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from memory_admin.models import MemoryStore
from tapeview.accounts import tokens
from tapeview.accounts.models import ApiToken
from tapeview.tapes.models import Tape
from tests.conftest import Api

pytestmark = pytest.mark.django_db

READS = [
    "/api/sources",
    "/api/tapes",
    "/api/tapes/{tape}",
    "/api/tapes/{tape}/entries",
    "/api/tapes/{tape}/entries/1",
    "/api/tapes/{tape}/entries/1/raw",
    "/api/tapes/{tape}/anchors",
    "/api/tapes/{tape}/context",
    "/api/search?q=x",
    "/api/memory",
    "/api/memory/search?q=x",
    "/api/memory/{store}",
    "/api/memory/{store}/versions",
    "/api/memory/{store}/diff",
]
WRITES = [
    ("post", "/api/tapes/{tape}/handoff", {"name": "phase/x"}),
    ("put", "/api/memory/{store}/long-term", {"content": "x", "base_version": "8"}),
    ("post", "/api/memory/{store}/prune", {"older_than_days": 0, "dry_run": False}),
]


def ids() -> dict[str, str]:
    zone = MemoryStore.objects.get(kind="bub.zone")
    return {"tape": zone.tape.key, "store": zone.key}


@pytest.mark.parametrize("path", READS)
def test_it_returns_401_json_without_auth_never_a_login_redirect(anonymous, memory_sources, path) -> None:
    r = anonymous.get(path.format(**ids()))
    assert r.status_code == 401 and r["WWW-Authenticate"] == "Bearer"
    assert r.json() == {"detail": "sign in, or send Authorization: Bearer <token> (a live token)"}


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_it_returns_401_for_a_write_without_auth(anonymous, memory_sources, method, path, body) -> None:
    r = getattr(anonymous, method)(path.format(**ids()), body)
    assert r.status_code == 401 and set(r.json()) == {"detail"}


@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_a_read_token_gets_403_on_every_write_and_nothing_changes(
    reader, memory_sources, idle, method, path, body
) -> None:
    zone = MemoryStore.objects.get(kind="bub.zone")
    files = [Path(zone.path), Path(zone.tape.path)]
    before = [f.read_bytes() for f in files]
    r = getattr(reader, method)(path.format(**ids()), body)
    assert r.status_code == 403 and r.json() == {"detail": "this needs a token with write scope"}
    assert [f.read_bytes() for f in files] == before


@pytest.mark.parametrize("token", ["", "tv_not-a-token", "Basic abc", "tv_" + "x" * 300])
def test_an_unknown_token_gets_401(memory_sources, token) -> None:
    r = Client().get("/api/tapes", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401


def test_an_expired_or_revoked_token_gets_401(memory_sources) -> None:
    expired, expired_text = tokens.create("old", "write", expires_days=1)
    ApiToken.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    revoked, revoked_text = tokens.create("gone", "write")
    tokens.revoke(revoked)
    for text in (expired_text, revoked_text):
        assert Api(Client(), text).get("/api/tapes").status_code == 401


def test_a_token_in_use_is_marked_used(reader, read_token, memory_sources) -> None:
    assert ApiToken.objects.get(name="reader").last_used_at is None
    assert reader.get("/api/tapes").status_code == 200
    assert ApiToken.objects.get(name="reader").last_used_at is not None


def test_the_browser_session_reads_the_api(viewer_client, memory_sources) -> None:
    r = viewer_client.get("/api/tapes")
    assert r.status_code == 200 and r.json()["items"]


def test_a_viewer_session_gets_403_on_a_write(viewer_client, memory_sources) -> None:
    r = viewer_client.put(
        f"/api/memory/{ids()['store']}/long-term",
        {"content": "x", "base_version": "8"},
        content_type="application/json",
    )
    assert r.status_code == 403 and r.json() == {"detail": "this needs the operator role"}


def test_a_session_write_needs_the_csrf_token(user_factory, memory_sources, idle) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user_factory("olga", "operator"))
    url = f"/api/memory/{ids()['store']}/prune"
    body = {"older_than_days": 30, "dry_run": True}
    r = client.post(url, body, content_type="application/json")
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
    client.get("/memory/")  # any page sets the CSRF cookie
    token = client.cookies["csrftoken"].value
    r = client.post(url, body, content_type="application/json", headers={"X-CSRFToken": token})
    assert r.status_code == 200


def test_an_operator_session_writes_as_the_user(operator_client, memory_sources, idle) -> None:
    tape = Tape.objects.get(name="hand_memory_zone")
    r = operator_client.post(
        f"/api/tapes/{tape.key}/handoff", {"name": "phase/review"}, content_type="application/json"
    )
    assert r.status_code == 201
    assert r.json()["entries"][0]["payload"]["state"] == {"owner": "olga"}


def test_the_openapi_document_and_docs_are_for_signed_in_people_and_tokens(
    anonymous, reader, viewer_client
) -> None:
    assert anonymous.get("/api/openapi.json").status_code == 401
    r = anonymous.get("/api/docs")
    assert r.status_code == 302 and r["Location"].startswith("/login/")
    schema = reader.get("/api/openapi.json").json()
    assert schema["info"]["title"] == "Tapeview API" and "/api/tapes/{tape_id}/handoff" in schema["paths"]
    assert viewer_client.get("/api/docs").status_code == 200


def test_every_error_is_detail_shaped(reader, memory_sources) -> None:
    for path, status in [
        ("/api/tapes/0000000000000000", 404),
        ("/api/tapes?limit=0", 422),
        ("/api/tapes?cursor=bm9wZQ", 400),
        ("/api/nowhere", 404),
    ]:
        r = reader.get(path)
        assert r.status_code == status and list(r.json()) == ["detail"], path
