"""A 400 says why, where the server knows it, in its own words; the generic text is the fallback."""

from __future__ import annotations

import pytest
from django.core.exceptions import BadRequest, SuspiciousOperation
from django.test import RequestFactory

from tapeview import errors

GENERIC = "It was too large or malformed."


def reason(html: str) -> str:
    return html.split('<p id="reason">', 1)[1].split("</p>", 1)[0]


@pytest.mark.django_db
def test_a_page_body_over_the_limit_says_how_much_the_server_accepts(client, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    page = client.post("/login/", {"username": "vera", "password": "x" * 5000})
    assert page.status_code == 413
    assert (
        reason(page.content.decode())
        == "The request&#x27;s body is too large: this server accepts at most 1000 bytes."
    )


def test_an_api_body_over_the_limit_says_how_much_the_server_accepts(writer, served, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
    from tapeview.tapes.models import Tape

    tape = Tape.objects.filter(kind="bub", role="tape").first()
    answer = writer.post(f"/api/tapes/{tape.key}/handoff", {"name": "x", "summary": "y" * 3_000_000})
    assert answer.status_code == 413
    assert answer.json() == {"detail": "The request's body is too large: this server accepts at most 2.0 MB."}


@pytest.mark.parametrize(
    ("query", "problem"),
    [
        ("", "It is missing."),
        ("?after=x", "Enter a whole number."),
        ("?after=-1", "greater than or equal to 0"),
    ],
)
def test_a_bad_tail_position_says_what_is_wrong_with_it(viewer_client, served, query, problem) -> None:
    from tapeview.tapes.models import Tape

    tape = Tape.objects.filter(kind="bub", role="tape").first()
    page = viewer_client.get(f"/tapes/{tape.key}/tail{query}")
    assert page.status_code == 400
    said = reason(page.content.decode())
    assert (
        said.startswith("?after= is the position of the last entry shown, a whole number: ")
        and problem in said
    )


@pytest.mark.django_db
def test_a_host_the_server_does_not_answer_to_is_named_by_its_setting_not_echoed(client) -> None:
    page = client.get("/", HTTP_HOST="evil.example")
    text = page.content.decode()
    assert page.status_code == 400 and "evil.example" not in text
    assert "does not answer to the host name in the address (TAPEVIEW_ALLOWED_HOSTS" in reason(text)


@pytest.mark.django_db
def test_a_bad_requests_own_words_are_escaped_and_anything_else_gets_the_generic_text() -> None:
    request = RequestFactory().get("/x")
    said = errors.bad_request(request, BadRequest("<script>alert(1)</script>")).content.decode()
    assert reason(said) == "&lt;script&gt;alert(1)&lt;/script&gt;"
    unknown = errors.bad_request(request, SuspiciousOperation("secret=hunter2")).content.decode()
    assert reason(unknown) == GENERIC and "hunter2" not in unknown
    api = errors.bad_request(RequestFactory().get("/api/x"), SuspiciousOperation("secret=hunter2"))
    assert api.status_code == 400 and b"hunter2" not in api.content
