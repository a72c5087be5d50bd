"""An export's segment named by anchor positions or names, as the README says; one it cannot give is
a page that says what is wrong (as the API's detail does), not "too large or malformed"."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from .operator_sources import serve, tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def sources(settings, tmp_path: Path) -> dict[str, Path]:
    return serve(settings, tmp_path)


def body(response) -> bytes:
    assert response.streaming
    return b"".join(response.streaming_content)


@pytest.mark.parametrize(
    ("named", "positions"),
    [
        ({"from": "phase/explore-done", "to": "phase/implement"}, {"from": 32, "to": 45}),
        ({"from": "phase/implement"}, {"from": 45}),
        ({"to": "auto_handoff/context_overflow"}, {"to": 70}),
        ({"from": "32", "to": "phase/implement"}, {"from": 32, "to": 45}),
    ],
)
def test_a_segment_may_name_its_anchors_as_the_readme_says(
    viewer_client, reader, sources, named, positions
) -> None:
    t = tape("session_realistic", "bub")
    wanted = body(viewer_client.get(f"/tapes/{t.key}/export.jsonl", positions))
    page = viewer_client.get(f"/tapes/{t.key}/export.jsonl", named)
    api = reader.get(f"/api/tapes/{t.key}/export", format="jsonl", **named)
    assert page.status_code == api.status_code == 200
    assert body(page) == body(api) == wanted
    assert (
        page["Content-Disposition"]
        == viewer_client.get(f"/tapes/{t.key}/export.jsonl", positions)["Content-Disposition"]
    )


@pytest.mark.parametrize(
    ("params", "status", "problem"),
    [
        ({"from": 70, "to": 1}, 400, "`to` must be an anchor after `from`"),
        ({"from": "phase/implement", "to": "phase/implement"}, 400, "`to` must be an anchor after `from`"),
        ({"from": "nope"}, 404, "no anchor 'nope' on this tape"),
        ({"to": 33}, 404, "no anchor at entry 33 of this tape"),
        ({"from": "x" * 301}, 400, "`from` is an anchor's position or name (at most 300 characters)"),
    ],
)
@pytest.mark.parametrize("fmt", ["jsonl", "md"])
def test_a_segment_it_cannot_give_is_a_page_saying_why(
    viewer_client, reader, sources, params, status, problem, fmt
) -> None:
    t = tape("session_realistic", "bub")
    page = viewer_client.get(f"/tapes/{t.key}/export.{fmt}", params)
    assert page.status_code == status and not page.streaming
    text = html.unescape(page.content.decode())
    assert f'<p role="alert" id="export-problem">{problem}.</p>' in text
    assert "too large or malformed" not in text
    # A way on: the tape's anchors, and the whole tape in the same format.
    assert f'href="/tapes/{t.key}/?anchors=1"' in text
    assert f'href="/tapes/{t.key}/export.{fmt}" download' in text
    api = reader.get(f"/api/tapes/{t.key}/export", format=fmt, **params)
    if len(str(params.get("from", ""))) <= 300:
        assert api.status_code == status and api.json() == {"detail": problem}
    else:  # the API's schema refuses it first, as for every other parameter
        assert api.status_code == 422


def test_a_nul_in_an_anchor_name_is_refused_not_looked_up(viewer_client, reader, sources) -> None:
    t = tape("session_realistic", "bub")
    page = viewer_client.get(f"/tapes/{t.key}/export.md", {"to": "a\x00b"})
    assert page.status_code == 400
    assert "`to` is an anchor&#x27;s position or name" in page.content.decode()
    assert reader.get(f"/api/tapes/{t.key}/export", to="a\x00b").status_code == 422
