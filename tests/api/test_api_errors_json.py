"""Every answer under /api/ is `{"detail": ...}` JSON, also where no endpoint answers: an unknown
path, a method the endpoint does not take, a key with a slash in it, a body too large."""

from __future__ import annotations

import pytest
from django.test import Client

from tapeview.tapes.models import Tape


def bub_tape() -> Tape:
    return Tape.objects.filter(kind="bub", role="tape").first()


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/api/nonexistent"),
        ("put", "/api/memory/..%2F..%2Fetc/long-term"),
        ("post", "/api/tapes/a%2Fb/handoff"),
        ("get", "/api/nonexistent"),
    ],
)
def test_a_path_no_endpoint_answers_is_a_json_404(writer, served, method: str, path: str) -> None:
    service = Client(enforce_csrf_checks=True)  # as a real server checks: a token is not a session
    if method == "get":
        answer = service.get(path, headers=writer.headers)
    else:
        answer = getattr(service, method)(path, "{}", content_type="application/json", headers=writer.headers)
    assert answer.status_code == 404
    assert answer["Content-Type"].startswith("application/json")
    assert isinstance(answer.json()["detail"], str)


def test_a_method_the_endpoint_does_not_take_is_a_json_405(writer, served) -> None:
    answer = writer.client.delete(f"/api/tapes/{bub_tape().key}", headers=writer.headers)
    assert answer.status_code == 405
    assert answer["Content-Type"].startswith("application/json")
    assert "GET" in answer["Allow"] and "DELETE" in answer.json()["detail"]


def test_a_body_too_large_is_413_and_says_the_limit(writer, served, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
    answer = writer.post(f"/api/tapes/{bub_tape().key}/handoff", {"name": "x", "summary": "y" * 3_000_000})
    assert answer.status_code == 413
    assert answer.json() == {"detail": "The request's body is too large: this server accepts at most 2.0 MB."}


@pytest.mark.django_db
def test_a_signed_in_browser_without_its_csrf_token_gets_json_under_api(admin_user) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    answer = browser.post("/api/tapes/x/reviews", "{}", content_type="application/json")
    assert answer.status_code == 403
    assert "CSRF" in answer.json()["detail"]
