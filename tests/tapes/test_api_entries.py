"""The timeline API of one tape: entries, raw lines, anchors, context, handoffs."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tapeview.accounts.models import AuditEvent
from tapeview.sources import bub
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def key(name: str) -> str:
    return Tape.objects.get(name=name).key


def test_entries_page_by_cursor_within_after_and_before(reader, served) -> None:
    url = f"/api/tapes/{key('session_realistic')}/entries"
    first = reader.get(url, limit=50).json()
    assert [e["pos"] for e in first["items"]] == list(range(1, 51))
    second = reader.get(url, limit=50, cursor=first["next_cursor"]).json()
    assert [e["pos"] for e in second["items"]] == list(range(51, 98)) and second["next_cursor"] is None
    window = reader.get(url, after=10, before=15).json()["items"]
    assert [e["pos"] for e in window] == [11, 12, 13, 14]
    entry = first["items"][0]
    assert set(entry) >= {"pos", "id", "kind", "name", "date", "payload", "meta", "readable"}


def test_entries_filter_by_kinds(reader, served) -> None:
    items = reader.get(f"/api/tapes/{key('session_realistic')}/entries", kinds="anchor,tool_call").json()[
        "items"
    ]
    assert items and {e["kind"] for e in items} == {"anchor", "tool_call"}


def test_big_payloads_are_bounded_in_lists_and_whole_with_full_or_by_pos(reader, served) -> None:
    path: Path = served["samples"] / "fork_merged.jsonl"
    blob = "y" * 100_000
    with path.open("a") as f:
        f.write('{"id": 13, "kind": "tool_result", "payload": {"results": ["' + blob + '"]}, "meta": {}}\n')
    url = f"/api/tapes/{key('fork_merged')}/entries"
    listed = reader.get(url, after=12).json()["items"][0]
    assert listed["truncated"] is True and listed["payload"] is None
    assert listed["preview"].startswith('{"results":["yyy') and len(listed["preview"]) <= 2001
    full = reader.get(url, after=12, full="true").json()["items"][0]
    assert full["truncated"] is False and full["payload"]["results"][0] == blob
    one = reader.get(f"{url}/13").json()
    assert one["payload"]["results"][0] == blob


def test_an_entry_too_big_to_parse_comes_whole_from_raw(reader, served) -> None:
    path: Path = served["samples"] / "fork_merged.jsonl"
    line = (
        '{"id": 13, "kind": "tool_result", "payload": {"results": ["'
        + "z" * (3 * 1024 * 1024)
        + '"]}, "meta": {}}\n'
    )
    with path.open("a") as f:
        f.write(line)
    url = f"/api/tapes/{key('fork_merged')}/entries/13"
    one = reader.get(url).json()
    assert one["truncated"] is True and one["kind"] == "tool_result" and one["payload"] is None
    raw = reader.get(f"{url}/raw")
    assert raw["Content-Type"].startswith("text/plain") and b"".join(raw.streaming_content) == line.encode()


def test_unreadable_lines_are_entries_with_readable_false_and_a_preview(reader, served) -> None:
    path = served["samples"] / "fork_merged.jsonl"
    with path.open("a") as f:
        f.write('{"id": 13, "kind": "message", "payload": {"role": "assi')
        f.write(
            '{"id": 14, "kind": "message", "payload": {"role": "user", "content": "after"}, "meta": {}}\n'
        )
    items = reader.get(f"/api/tapes/{key('fork_merged')}/entries", after=12).json()["items"]
    bad = items[0]
    assert (bad["pos"], bad["readable"], bad["payload"]) == (13, False, None)
    assert bad["preview"].startswith('{"id": 13') and "glued" in bad["problem"]


def test_an_unknown_entry_is_404(reader, served) -> None:
    url = f"/api/tapes/{key('session_realistic')}/entries"
    for pos in (999, 0, 2**70):
        assert reader.get(f"{url}/{pos}").status_code == 404
    assert reader.get(f"{url}/abc").status_code == 422


def test_anchors_in_tape_order_with_their_phase_counts(reader, served) -> None:
    url = f"/api/tapes/{key('9d11f561157e98d3__0b871d5e50e7c192')}/anchors"
    first = reader.get(url, limit=2).json()
    rest = reader.get(url, cursor=first["next_cursor"]).json()
    anchors = first["items"] + rest["items"]
    assert [a["name"] for a in anchors] == [
        "session/start",
        "phase/explore-done",
        "phase/implement",
        "auto_handoff/context_overflow",
    ]
    assert [a["pos"] for a in anchors] == sorted(a["pos"] for a in anchors) and rest["next_cursor"] is None
    assert anchors[1]["entries"] == 12 and anchors[1]["phase"] is True


def test_context_after_the_last_or_a_chosen_anchor(reader, served) -> None:
    url = f"/api/tapes/{key('session_realistic')}/context"
    last = reader.get(url).json()
    assert last["anchor"]["name"] == "auto_handoff/context_overflow" and len(last["messages"]) == 6
    assert last["chars"] == sum(m["chars"] for m in last["messages"])
    by_name = reader.get(url, anchor="phase/implement").json()
    by_pos = reader.get(url, anchor="45").json()
    assert len(by_name["messages"]) == len(by_pos["messages"]) > 6
    for anchor in ("nope", "99999999999999999999999", "²"):
        assert reader.get(url, anchor=anchor).status_code == 404


def test_a_handoff_writes_the_anchor_and_event_and_answers_201_with_them(writer, served, idle) -> None:
    tape = Tape.objects.get(label="telegram:-1001234567890")
    path = Path(tape.path)
    last_id = json.loads(path.read_text().splitlines()[-1])["id"]
    body = {"name": "phase/review", "summary": "Reviewed.", "state": {"next": ["deploy"]}}
    r = writer.post(f"/api/tapes/{tape.key}/handoff", body)
    assert r.status_code == 201
    anchor, event = r.json()["entries"]
    assert (anchor["kind"], anchor["name"], anchor["id"]) == ("anchor", "phase/review", last_id + 1)
    assert anchor["payload"]["state"] == {"owner": "token:writer", "summary": "Reviewed.", "next": ["deploy"]}
    assert (event["name"], event["id"]) == ("handoff", last_id + 2)
    assert [e.name for e in list(bub.scan(path))[-2:]] == ["phase/review", "handoff"]
    audit = AuditEvent.objects.get()
    assert (audit.action, audit.actor) == ("handoff", "token:writer")


def test_a_handoff_on_a_busy_tape_is_409_with_retry_after_and_writes_nothing(
    writer, served, settings
) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 3600
    tape = Tape.objects.get(label="telegram:-1001234567890")
    os.utime(tape.path, (time.time(), time.time()))
    before = Path(tape.path).read_bytes()
    r = writer.post(f"/api/tapes/{tape.key}/handoff", {"name": "phase/review"})
    assert r.status_code == 409 and int(r["Retry-After"]) >= 1
    assert r.json()["retry_after"] == int(r["Retry-After"]) and r.json()["detail"].startswith("busy:")
    assert Path(tape.path).read_bytes() == before and not AuditEvent.objects.exists()


def test_a_handoff_on_a_nanobot_session_is_refused_with_400(writer, settings, tmp_path, idle) -> None:
    shutil.copytree(FIXTURES / "nanobot", tmp_path / "nanobot")
    settings.TAPEVIEW_SOURCES = f"nb=nanobot:{tmp_path / 'nanobot' / 'current'}"
    discovery.sync()
    tape = Tape.objects.filter(kind="nanobot").first()
    before = Path(tape.path).read_bytes()
    r = writer.post(f"/api/tapes/{tape.key}/handoff", {"name": "phase/x"})
    assert r.status_code == 400 and "nanobot sessions take no handoff" in r.json()["detail"]
    assert Path(tape.path).read_bytes() == before
    shown = writer.get(f"/api/tapes/{tape.key}").json()
    assert shown["handoff"] is False and "nanobot" in shown["handoff_refusal"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "two\nlines"},
        {"name": "x" * 201},
        {"name": "ok", "state": "not an object"},
        {"name": "ok", "state": {"a": "\x00"}},
    ],
)
def test_a_bad_handoff_body_is_422_with_the_errors_listed(writer, served, idle, body) -> None:
    tape = Tape.objects.get(label="telegram:-1001234567890")
    r = writer.post(f"/api/tapes/{tape.key}/handoff", body)
    assert r.status_code == 422
    assert all(set(e) == {"loc", "msg", "type"} for e in r.json()["detail"])


def test_a_handoff_body_that_is_not_json_is_400(writer, served) -> None:
    tape = Tape.objects.get(label="telegram:-1001234567890")
    r = writer.client.post(
        f"/api/tapes/{tape.key}/handoff", "{nope", content_type="application/json", headers=writer.headers
    )
    assert r.status_code == 400 and list(r.json()) == ["detail"]


def test_an_unknown_entry_is_404_saying_so(reader, served) -> None:
    url = f"/api/tapes/{key('session_realistic')}/entries"
    for pos in (999, 0, 2**70):
        for suffix in ("", "/raw"):
            r = reader.get(f"{url}/{pos}{suffix}")
            assert r.status_code == 404 and r.json() == {"detail": f"no entry {pos} on this tape"}


def test_a_raw_line_is_the_same_plain_text_as_on_the_page(reader, viewer_client, served) -> None:
    k = key("session_realistic")
    api = reader.get(f"/api/tapes/{k}/entries/60/raw")
    page = viewer_client.get(f"/tapes/{k}/entries/60/raw")
    for r in (api, page):
        assert r.status_code == 200 and r["Content-Type"] == "text/plain; charset=utf-8"
        assert r["X-Content-Type-Options"] == "nosniff"
    assert api["Content-Length"] == page["Content-Length"]
    assert b"".join(api.streaming_content) == b"".join(page.streaming_content)


@pytest.mark.parametrize("anchor", ["²", "9" * 30, "nope"])
def test_an_anchor_that_is_not_there_is_404_saying_no_anchor(reader, served, anchor) -> None:
    r = reader.get(f"/api/tapes/{key('session_realistic')}/context", anchor=anchor)
    assert r.status_code == 404 and r.json() == {"detail": f"no anchor {anchor!r} on this tape"}


def test_entries_of_some_kinds_page_by_cursor_within_after_and_before(reader, served) -> None:
    url = f"/api/tapes/{key('session_realistic')}/entries"
    params = {"kinds": "message, tool_call", "after": 10, "before": 80}
    everything = reader.get(url, **params, limit=500).json()
    assert everything["next_cursor"] is None
    expected = [e["pos"] for e in everything["items"]]
    assert expected and all(10 < p < 80 for p in expected)
    assert {e["kind"] for e in everything["items"]} == {"message", "tool_call"}
    seen, cursor = [], None
    while True:
        page = reader.get(url, **params, limit=7, **({"cursor": cursor} if cursor else {})).json()
        seen += [e["pos"] for e in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == expected
