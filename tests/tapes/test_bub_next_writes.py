"""Handoffs and crash damage on tapes in Bub's next format, beside a 0.5.1 tape in the same folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tapeview.sources import bub
from tapeview.tapes import discovery, index
from tapeview.tapes.models import Tape

from .next_tapes import FIXTURES, OLD, SESSION, make_home

pytestmark = pytest.mark.django_db


@pytest.fixture
def next_home(settings, tmp_path: Path) -> Path:
    root = make_home(tmp_path / "tapes")
    settings.TAPEVIEW_SOURCES = f"home=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    discovery.sync()
    return root


def tape(name: str) -> Tape:
    return Tape.objects.get(name=name)


def test_an_api_handoff_on_a_next_tape_is_one_anchor_line_the_index_reads_back(writer, next_home) -> None:
    t = tape(SESSION)
    r = writer.post(
        f"/api/tapes/{t.key}/handoff", {"name": "phase/review", "summary": "checked", "after": 169}
    )
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["ids"] == [170] and body["entries"][0]["kind"] == "anchor"
    assert body["entries"][0]["name"] == "phase/review"
    line = json.loads(Path(t.path).read_bytes().splitlines()[-1])
    assert line["type"] == "build.bub.context.anchor.v1" and line["data"]["step_id"] == 170
    t.refresh_from_db()
    assert (t.entries, t.anchors, t.last_anchor, t.unreadable) == (170, 5, "phase/review", 0)


def test_a_0_5_1_tape_in_the_same_folder_keeps_getting_0_5_1_handoffs(writer, next_home) -> None:
    t = tape(OLD)
    r = writer.post(f"/api/tapes/{t.key}/handoff", {"name": "phase/review"})
    assert r.status_code == 201, r.content
    anchor, event = [json.loads(line) for line in Path(t.path).read_bytes().splitlines()[-2:]]
    assert list(anchor) == ["id", "kind", "payload", "meta", "date"] and anchor["kind"] == "anchor"
    assert event["payload"]["name"] == "handoff"


def test_a_handoff_while_a_turn_is_written_gets_409_and_nothing_changes(writer, next_home) -> None:
    t = tape(SESSION)
    path = Path(t.path)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-2]))  # the burst has not written its loop.step and invocation end yet
    before = path.read_bytes()
    r = writer.post(f"/api/tapes/{t.key}/handoff", {"name": "phase/review"})
    assert r.status_code == 409 and "writing a turn" in r.json()["detail"]
    assert path.read_bytes() == before


def test_a_crash_leaves_an_unfinished_line_and_bubs_next_append_truncates_it(
    viewer_client, settings, tmp_path
) -> None:
    root = tmp_path / "tapes"
    root.mkdir()
    path = root / f"{SESSION}.jsonl"
    path.write_bytes((FIXTURES / "bub-next" / "crash_truncated_last_line_CRASH.jsonl").read_bytes())
    settings.TAPEVIEW_SOURCES = f"home=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    t = tape(SESSION)
    assert (t.entries, t.unreadable) == (168, 0) and t.pending_bytes > 0
    page = viewer_client.get(f"/tapes/{t.key}/?end=1").content.decode()
    assert "unfinished last line" in page
    # Bub's next append (formats/bub-next.md §7): cut back to after the last newline, then append
    whole = (FIXTURES / "bub-next" / "session_realistic.jsonl").read_bytes().splitlines(keepends=True)
    data = path.read_bytes()
    os.truncate(path, data.rfind(b"\n") + 1)
    with path.open("ab") as f:
        f.write(whole[-1])
        f.write(whole[0])
    assert index.refresh(t)
    t.refresh_from_db()
    assert (t.entries, t.unreadable, t.pending_bytes) == (170, 0, 0)
    assert [e.readable for e in bub.scan(path)][-2:] == [True, True]
    page = viewer_client.get(f"/tapes/{t.key}/?end=1").content.decode()
    assert "unfinished last line" not in page and "agent.invocation.failed" in page
