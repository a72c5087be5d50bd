"""Appending to a live Bub tape as a guest: only while idle, in the agent's exact line format."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tapeview.sources import bub_append, bub_tail
from tapeview.sources.bub import scan
from tapeview.sources.bub_append import append, append_state, handoff, idle_state
from tapeview.sources.model import TapeBusy, TapeNotFound

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bub"
DATE = "2026-11-23T08:00:00.123456+00:00"


def sample(tmp_path: Path, name: str, *, age: float = 60.0) -> Path:
    """A copy of a real sample whose last change was `age` seconds ago."""
    path = tmp_path / name
    shutil.copyfile(FIXTURES / name, path)
    settle(path, age)
    return path


def settle(path: Path, age: float = 60.0) -> None:
    then = time.time() - age
    os.utime(path, (then, then))


def line(id: int, kind: str, payload: dict, **extra: object) -> str:
    entry = {"id": id, "kind": kind, "payload": payload, "meta": {}, "date": DATE, **extra}
    return json.dumps(entry, ensure_ascii=False) + "\n"


def event(id: int, event_name: str, **data: object) -> str:
    return line(id, "event", {"name": event_name, "data": data})


def tape(tmp_path: Path, *lines: str, age: float = 60.0) -> Path:
    path = tmp_path / "9d11f561157e98d3__0b871d5e50e7c192.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    settle(path, age)
    return path


def one_event(nid: int) -> list[dict]:
    payload = {"name": "note", "data": {"text": "über"}}
    return [{"id": nid, "kind": "event", "payload": payload, "meta": {"origin": "tapeview"}, "date": DATE}]


def test_handoff_lines_are_the_agents_exact_format_and_parse_back(tmp_path: Path) -> None:
    path = sample(tmp_path, "reset_after_archive.jsonl")
    before = path.read_bytes()

    written = handoff(
        path, "phase/review", {"owner": "vera", "summary": "Ready for review — 完成"}, now_iso=DATE
    )

    added = path.read_bytes()[len(before) :].decode("utf-8")
    assert path.read_bytes().startswith(before)
    assert added == (
        '{"id": 13, "kind": "anchor", "payload": {"name": "phase/review", "state": {"owner": "vera", '
        '"summary": "Ready for review — 完成"}}, "meta": {"origin": "tapeview"}, "date": "' + DATE + '"}\n'
        '{"id": 14, "kind": "event", "payload": {"name": "handoff", "data": {"name": "phase/review", '
        '"state": {"owner": "vera", "summary": "Ready for review — 完成"}}}, "meta": {"origin": "tapeview"}, '
        '"date": "' + DATE + '"}\n'
    )
    assert [e["id"] for e in written] == [13, 14]
    entries = list(scan(path))
    assert all(e.readable for e in entries)
    assert [(e.id, e.kind, e.name) for e in entries[-2:]] == [
        (13, "anchor", "phase/review"),
        (14, "event", "handoff"),
    ]
    assert entries[-1].meta == {"origin": "tapeview"}


def test_handoff_without_state_writes_a_bare_anchor_and_an_empty_event_state(tmp_path: Path) -> None:
    path = sample(tmp_path, "reset_after_archive.jsonl")

    written = handoff(path, "phase/next", None, now_iso=DATE)

    assert written[0]["payload"] == {"name": "phase/next"}
    assert written[1]["payload"] == {"name": "handoff", "data": {"name": "phase/next", "state": {}}}


def test_handoff_dates_lines_the_way_bub_does_when_no_time_is_given(tmp_path: Path) -> None:
    path = sample(tmp_path, "reset_after_archive.jsonl")

    written = handoff(path, "phase/next", {"summary": "x"})

    assert written[0]["date"].endswith("+00:00")
    assert list(scan(path))[-1].date is not None


def test_ids_continue_from_the_last_line_even_when_ids_go_backwards(tmp_path: Path) -> None:
    path = tape(
        tmp_path,
        event(1, "command", status="ok"),
        event(50, "command", status="ok"),
        event(7, "loop.step", status="ok"),
    )

    written = handoff(path, "phase/x", {}, now_iso=DATE, quiet_seconds=0)

    assert [e["id"] for e in written] == [8, 9]
    assert [e.id for e in scan(path)] == [1, 50, 7, 8, 9]


def test_an_unreadable_last_line_is_skipped_to_find_the_id_as_the_agent_does(tmp_path: Path) -> None:
    path = tape(tmp_path, event(41, "command", status="ok"), "{not json\n", "\n")

    written = append(path, one_event, quiet_seconds=0)

    assert written[0]["id"] == 42


def test_an_empty_tape_starts_at_id_1(tmp_path: Path) -> None:
    path = tape(tmp_path)

    assert idle_state(path, quiet_seconds=0) == (True, "idle (the tape has no entries)")
    assert [e["id"] for e in handoff(path, "phase/x", {}, now_iso=DATE, quiet_seconds=0)] == [1, 2]


@pytest.mark.parametrize(
    "last",
    [
        line(9, "tool_call", {"calls": [{"id": "c1", "function": {"name": "bash", "arguments": "{}"}}]}),
        line(9, "tool_result", {"results": ["ok"]}),
        line(9, "message", {"role": "user", "content": "hi"}),
        event(9, "loop.step", step=1, status="continue"),
        event(9, "loop.step", step=1, status="auto_handoff"),
        event(9, "loop.step.start", step=2, prompt=None),
        event(9, "run", status="ok"),
        event(9, "loop.step.finish", step=1, followup=True),
    ],
    ids=[
        "tool_call",
        "tool_result",
        "message",
        "continue",
        "auto_handoff",
        "step_start",
        "run",
        "finish_followup",
    ],
)
def test_a_mid_turn_tape_is_busy_and_left_byte_for_byte_unchanged(tmp_path: Path, last: str) -> None:
    path = tape(tmp_path, event(8, "loop.step", status="ok"), last)
    before = path.read_bytes()

    with pytest.raises(TapeBusy) as busy:
        handoff(path, "phase/x", {}, now_iso=DATE, quiet_seconds=0)

    assert "mid-turn" in str(busy.value)
    assert busy.value.retry_after > 0
    assert path.read_bytes() == before


def test_busy_reason_names_the_last_entry(tmp_path: Path) -> None:
    path = tape(tmp_path, line(9, "tool_call", {"calls": []}))

    assert idle_state(path, quiet_seconds=0) == (False, "the agent is mid-turn (last entry: tool_call)")


def test_the_real_session_sample_ends_with_a_failed_model_call_which_ends_the_turn(tmp_path: Path) -> None:
    path = sample(tmp_path, "session_realistic.jsonl")

    assert idle_state(path) == (True, "idle")
    assert [e["id"] for e in handoff(path, "phase/after-error", {}, now_iso=DATE)] == [98, 99]


@pytest.mark.parametrize(
    "last",
    [
        event(9, "loop.step", step=2, status="ok"),
        event(9, "loop.step", step=2, status="error"),
        event(9, "command", raw="tape.info", status="ok"),
        event(9, "handoff", name="phase/x", state={}),
        line(9, "anchor", {"name": "phase/x", "state": {}}),
        event(9, "loop.result", steps=2, error=None),
        event(9, "loop.step.finish", step=2, followup=False),
        event(9, "run", status="error", model="openai:gpt-4.1-mini"),
    ],
    ids=[
        "step_ok",
        "step_error",
        "command",
        "handoff",
        "anchor",
        "legacy_result",
        "legacy_finish",
        "run_error",
    ],
)
def test_a_tape_after_a_terminal_entry_is_idle(tmp_path: Path, last: str) -> None:
    path = tape(tmp_path, last)

    assert idle_state(path, quiet_seconds=1.5) == (True, "idle")


def test_a_recently_changed_tape_is_busy_and_unchanged(tmp_path: Path) -> None:
    path = sample(tmp_path, "reset_after_archive.jsonl")
    before = path.read_bytes()
    mtime = path.stat().st_mtime

    with pytest.raises(TapeBusy) as busy:
        handoff(path, "phase/x", {}, now_iso=DATE, quiet_seconds=1.5, now=lambda: mtime + 0.5)

    assert "quiet" in str(busy.value)
    assert busy.value.retry_after == pytest.approx(1.0)
    assert path.read_bytes() == before


def test_a_missing_tape_is_not_found_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "9d11f561157e98d3__0b871d5e50e7c192.jsonl"

    with pytest.raises(TapeNotFound):
        handoff(path, "phase/x", {}, now_iso=DATE, quiet_seconds=0)
    with pytest.raises(TapeNotFound):
        idle_state(path)

    assert not path.exists()


def test_crash_residue_is_a_turn_that_never_ended(tmp_path: Path) -> None:
    path = sample(tmp_path, "truncated_last_line_CRASH.jsonl", age=60)
    before = path.read_bytes()
    idle, reason = idle_state(path)
    assert not idle and "unfinished line" in reason
    with pytest.raises(TapeBusy):
        handoff(path, "phase/x", {}, now_iso=DATE)
    assert path.read_bytes() == before


def test_crash_residue_gets_a_newline_first_and_stays_unreadable(tmp_path: Path) -> None:
    path = sample(tmp_path, "truncated_last_line_CRASH.jsonl", age=3600)
    before = path.read_bytes()
    assert not before.endswith(b"\n")
    assert append_state(path, stopped_seconds=600).status == "stopped"

    written = handoff(
        path, "phase/recovered", {"summary": "after the crash"}, now_iso=DATE, allow_stopped=True
    )

    data = path.read_bytes()
    assert data[: len(before) + 1] == before + b"\n"
    entries = list(scan(path))
    residue, anchor, handoff_event = entries[-3:]
    assert not residue.readable
    assert residue.offset + residue.length == len(before) + 1
    # The last complete line of the sample is id 97; the residue has no id the agent could read.
    assert [e["id"] for e in written] == [98, 99]
    assert (anchor.id, anchor.kind, anchor.readable) == (98, "anchor", True)
    assert (handoff_event.id, handoff_event.name, handoff_event.readable) == (99, "handoff", True)


def test_a_fresh_unfinished_line_is_busy(tmp_path: Path) -> None:
    path = sample(tmp_path, "truncated_last_line_CRASH.jsonl")
    before = path.read_bytes()
    mtime = path.stat().st_mtime

    idle, reason = idle_state(path, quiet_seconds=1.5, now=lambda: mtime + 2.0)
    with pytest.raises(TapeBusy):
        handoff(path, "phase/x", {}, now_iso=DATE, quiet_seconds=1.5, now=lambda: mtime + 2.0)

    assert not idle
    assert "unfinished" in reason
    assert path.read_bytes() == before


def test_the_anchor_and_the_handoff_event_arrive_in_a_single_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sample(tmp_path, "reset_after_archive.jsonl")
    calls: list[bytes] = []
    real_write = os.write

    def counting_write(fd: int, data: bytes) -> int:
        calls.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(bub_append.os, "write", counting_write)

    handoff(path, "phase/x", {"summary": "s"}, now_iso=DATE)

    assert len(calls) == 1
    assert calls[0].count(b"\n") == 2


def test_a_write_by_the_agent_while_entries_are_prepared_makes_it_busy(tmp_path: Path) -> None:
    path = sample(tmp_path, "reset_after_archive.jsonl")
    agents_line = event(13, "loop.start", model="openai:gpt-4o-mini").encode()

    def build(nid: int) -> list[dict]:
        with open(path, "ab") as f:
            f.write(agents_line)
        return one_event(nid)

    before = path.read_bytes()
    with pytest.raises(TapeBusy):
        append(path, build)

    assert path.read_bytes() == before + agents_line


def test_the_tape_is_read_from_the_end_not_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = line(1, "system", {"content": "x" * 4000})
    path = tape(tmp_path, *[big] * 2000, event(2001, "loop.step", status="ok"))
    assert path.stat().st_size > 8_000_000
    read = []
    real_open = open

    class Counting:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def read(self, n: int = -1) -> bytes:
            data = self.f.read(n)
            read.append(len(data))
            return data

        def __getattr__(self, name: str):
            return getattr(self.f, name)

    monkeypatch.setattr(bub_tail, "open_file", lambda p: Counting(real_open(p, "rb")))

    written = append(path, one_event, quiet_seconds=0)

    assert written[0]["id"] == 2002
    assert 0 < sum(read) < 200_000


def test_entries_are_written_in_the_agents_key_order_whatever_the_builder_order(tmp_path: Path) -> None:
    path = sample(tmp_path, "reset_after_archive.jsonl")

    append(
        path, lambda nid: [{"date": DATE, "meta": {}, "payload": {"name": "n"}, "kind": "event", "id": nid}]
    )

    last = path.read_text(encoding="utf-8").splitlines()[-1]
    assert list(json.loads(last)) == ["id", "kind", "payload", "meta", "date"]


def test_a_builder_with_the_wrong_ids_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = sample(tmp_path, "reset_after_archive.jsonl")
    before = path.read_bytes()

    with pytest.raises(ValueError):
        append(path, lambda nid: one_event(nid + 5))

    assert path.read_bytes() == before


def test_a_tape_from_the_era_without_a_time_field_gets_lines_without_date(tmp_path: Path) -> None:
    path = sample(tmp_path, "memory_zone_pr33_unmerged.jsonl")

    written = handoff(path, "phase-2", {"summary": "legacy"}, now_iso=DATE)

    new_lines = [json.loads(raw) for raw in path.read_text(encoding="utf-8").splitlines()[-2:]]
    assert [list(obj) for obj in new_lines] == [["id", "kind", "payload", "meta"]] * 2
    assert [e["id"] for e in written] == [91, 92]
    assert "date" not in written[0]
    assert [e.date for e in list(scan(path))[-2:]] == [None, None]


def test_a_bub_0_2_3_tape_gets_a_float_timestamp_like_its_own_lines(tmp_path: Path) -> None:
    path = sample(tmp_path, "legacy_v0.2.3_session_timestamp.jsonl")
    os.utime(path, (1795400000.5 - 60, 1795400000.5 - 60))  # quiet for a minute at that moment

    handoff(path, "phase-2", {"summary": "legacy"}, now_iso=DATE, now=lambda: 1795400000.5)

    last = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    assert list(last) == ["id", "kind", "payload", "meta", "timestamp"]
    assert last["timestamp"] == 1795400000.5
