"""Errors can be followed: every count links to what it counts, an errors-only timeline with next and
previous error, and in the API an `error` flag on every entry and `?errors=true`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tapeview.tapes import rows
from tapeview.tapes.models import Tape

from .operator_sources import serve, tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def sources(settings, tmp_path: Path) -> dict[str, Path]:
    return serve(settings, tmp_path)


def every_item(api, tape_id: str, **params) -> list[dict]:
    items, cursor = [], None
    while True:
        page = api.get(
            f"/api/tapes/{tape_id}/entries", limit=100, **params, **({"cursor": cursor} if cursor else {})
        )
        assert page.status_code == 200
        body = page.json()
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items


@pytest.mark.parametrize(
    ("label", "source", "errors"),
    [
        ("discord:1187654321098765432", "old", 10),  # nanobot 0.1.4: failures are tool rows, not `error`s
        ("telegram:8123456789", "old", 14),
        ("telegram:8123456789", "nb", 1),
        ("session_realistic", "bub", 3),
        ("truncated_last_line_CRASH", "bub", 3),
        ("hand_memory_zone", "bub", 0),
    ],
)
def test_errors_true_lists_exactly_the_entries_the_tape_counts_as_errors(
    reader, sources, label, source, errors
) -> None:
    tape_id = tape(label, source).key
    counted = reader.get(f"/api/tapes/{tape_id}").json()["errors"]
    failed = every_item(reader, tape_id, errors="true")
    assert counted == errors and len(failed) == counted
    assert all(item["error"] is True for item in failed)
    everything = every_item(reader, tape_id)
    assert [i["pos"] for i in everything if i["error"]] == [i["pos"] for i in failed]
    assert all(isinstance(item["error"], bool) for item in everything)
    assert len(every_item(reader, tape_id, errors="false")) == len(everything) - counted


def test_the_failures_of_a_nanobot_session_are_tool_results_not_error_kinds(reader, sources) -> None:
    tape_id = tape("discord:1187654321098765432", "old").key
    assert reader.get(f"/api/tapes/{tape_id}/entries", kinds="error").json()["items"] == []
    failed = reader.get(f"/api/tapes/{tape_id}/entries", errors="true", kinds="tool_result").json()["items"]
    assert len(failed) == 10 and failed[0]["payload"]["content"].startswith("Error")


def test_the_index_links_every_count_to_what_it_counts(viewer_client, sources) -> None:
    t = tape("session_realistic", "bub")
    row = row_of(viewer_client.get("/", {"source": "bub", "q": "session_realistic"}).content.decode(), t)
    timeline = f"/tapes/{t.key}/"
    assert f'<td class="num entries"><a class="count" href="{timeline}">97</a>' in row
    assert f'<a class="count" href="{timeline}?anchors=1">4</a>' in row
    assert f'<a href="{timeline}?at=70#e70">auto_handoff/context_overflow</a>' in row
    assert f'<a class="count" href="{timeline}?after=70">{t.entries_since_anchor}</a>' in row
    assert f'<td class="num errors bad"><a class="count" href="{timeline}?errors=1">3</a></td>' in row


def test_a_zero_count_links_nowhere(viewer_client, sources) -> None:
    t = tape("hand_memory_zone", "bub")
    row = row_of(viewer_client.get("/", {"source": "bub", "q": "hand_memory_zone"}).content.decode(), t)
    assert '<td class="num errors "><span class="count">0</span></td>' in row


def row_of(html: str, t: Tape) -> str:
    rows = [r for r in html.split("<tr>") if f'href="/tapes/{t.key}/"' in r]
    assert len(rows) == 1
    return rows[0].split("</tr>")[0]


def test_the_errors_count_of_the_timeline_opens_the_errors_only_timeline(viewer_client, sources) -> None:
    t = tape("discord:1187654321098765432", "old")
    page = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    assert f'<a class="count" href="/tapes/{t.key}/?errors=1" id="count-errors">10</a>' in page
    # Its one anchor, the row nanobot's archive pointer names (nanobot/archived), links there too.
    assert f'<a class="count" href="/tapes/{t.key}/?anchors=1" id="count-anchors">1</a>' in page

    only = viewer_client.get(f"/tapes/{t.key}/", {"errors": 1})
    html = only.content.decode()
    assert only.status_code == 200 and "Only the errors of this tape (10)" in html
    shown = [int(p) for p in re.findall(r'<article class="entry [^"]*" id="e(\d+)"', html)]
    assert len(shown) == 10 and all(' error"' in a or " error " in a for a in articles(html))
    assert all(f'href="/tapes/{t.key}/?at={pos}#e{pos}">in the timeline</a>' in html for pos in shown)
    assert html.count("✗ failed") == 10 and "File not found" in html


def articles(html: str) -> list[str]:
    return re.findall(r'<article class="[^"]*"', html)


def test_next_and_previous_error_step_through_the_errors(viewer_client, sources) -> None:
    t = tape("telegram:8123456789", "old")
    failing = [r.pos for r in rows.of(t).where(errors=True).all()]
    html = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    first = failing[0]
    assert f'<a id="next-error" href="?at={first}#e{first}">next error →</a>' in html
    assert "no earlier error" in html

    for previous, current, following in zip(failing, failing[1:], failing[2:], strict=False):
        html = viewer_client.get(f"/tapes/{t.key}/", {"at": current}).content.decode()
        assert f'<a id="previous-error" href="?at={previous}#e{previous}">' in html
        assert f'<a id="next-error" href="?at={following}#e{following}">' in html
        assert f'class="entry k-tool_result n-read_file error target" id="e{current}"' in html
    last = viewer_client.get(f"/tapes/{t.key}/", {"at": failing[-1]}).content.decode()
    assert "no later error" in last


def test_stepping_in_the_errors_only_timeline_keeps_it(viewer_client, sources) -> None:
    t = tape("session_realistic", "bub")
    failing = [r.pos for r in rows.of(t).where(errors=True).all()]
    html = viewer_client.get(f"/tapes/{t.key}/", {"errors": 1, "at": failing[0]}).content.decode()
    assert f'<a id="next-error" href="?errors=1&amp;at={failing[1]}#e{failing[1]}">' in html
    assert 'id="only-errors"' not in html


def test_the_anchors_and_unreadable_counts_open_their_own_timelines(viewer_client, sources) -> None:
    t = tape("session_realistic", "bub")
    html = viewer_client.get(f"/tapes/{t.key}/", {"anchors": 1}).content.decode()
    assert "Only the anchors of this tape (4)" in html
    assert re.findall(r'class="anchor [^"]*" id="e(\d+)"', html) == ["1", "32", "45", "70"]
    assert "<article" not in html.split('id="entries"')[1]
    with open(t.path, "a") as f:
        f.write("{a line a crashed writer left\n")
    html = viewer_client.get(f"/tapes/{t.key}/", {"unreadable": 1}).content.decode()
    assert "Only the unreadable lines of this tape (1)" in html
    assert "end of these unreadable lines" in html


def test_the_pager_of_a_narrowed_timeline_keeps_the_narrowing(viewer_client, sources) -> None:
    t = tape("telegram:8123456789", "old")
    failing = [r.pos for r in rows.of(t).where(errors=True).all()]
    html = viewer_client.get(f"/tapes/{t.key}/", {"errors": 1, "after": failing[2]}).content.decode()
    shown = [int(p) for p in re.findall(r'<article class="entry [^"]*" id="e(\d+)"', html)]
    assert shown == failing[3:] and "end of these errors" in html
    assert f'href="?errors=1&amp;before={failing[3]}"' in html and 'href="?errors=1&amp;"' in html
