"""The handoff a guest writes to a tape in Bub's next format: the one line formats/bub-next.md §9
describes, only while the tape is idle, read back by a reader written from §7 as Bub's own."""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from datetime import datetime
from pathlib import Path

import pytest

from tapeview.sources import AgentStopped, TapeBusy, TapeMoved, TapeNotFound, bub, bub_next_append

NEXT = Path(__file__).resolve().parents[1] / "fixtures" / "bub-next"
ATTRIBUTES = {
    "specversion",
    "id",
    "source",
    "type",
    "datacontenttype",
    "dataschema",
    "subject",
    "time",
    "data",
}
AGENT_ONLY = ("tool_calls", "model_name", "metrics", "reasoning_effort", "reasoning_content")


class CodecError(ValueError):
    pass


def bub_scan(path: Path) -> list[dict]:
    """Bub's TapeFile.iter_entries (§7 Read): complete lines from byte 0, blank ones skipped, the
    partial tail left, every line decoded strictly; the first bad one aborts the whole scan."""
    data = path.read_bytes()
    records = []
    for line in data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise CodecError("invalid structured CloudEvent") from exc
        check_event(obj)
        check_record(obj["data"])
        records.append(obj)
    return records


def check_event(obj: object) -> None:
    if not isinstance(obj, dict) or obj.get("specversion") != "1.0":
        raise CodecError("invalid structured CloudEvent")
    for key in ("id", "source", "type"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise CodecError(f"bad {key}")
    when = datetime.fromisoformat(obj["time"])
    if when.tzinfo is None:
        raise CodecError("naive time")
    for key in obj:
        if key not in ATTRIBUTES and not re.fullmatch(r"[a-z0-9]+", key):
            raise CodecError(f"bad extension {key}")


def check_record(data: object) -> None:
    if (
        not isinstance(data, dict)
        or data.get("source") not in ("system", "user", "agent")
        or "message" not in data
    ):
        raise CodecError("invalid record")
    if data["source"] == "user" and "observation" in data:
        raise CodecError("user observation")
    if data["source"] != "agent" and any(k in data for k in AGENT_ONLY):
        raise CodecError("agent-only field")


def event_payload(record: dict) -> dict:
    try:
        payload = json.loads(record["data"]["observation"]["results"][0]["content"])
    except (KeyError, IndexError, TypeError, ValueError):
        return {}
    return payload if isinstance(payload, dict) else {}


def last_anchor(records: list[dict]) -> tuple[int, dict] | None:
    at = [i for i, r in enumerate(records, 1) if r["type"] == "build.bub.context.anchor.v1"]
    return (at[-1], event_payload(records[at[-1] - 1])) if at else None


@pytest.fixture
def tape(tmp_path: Path) -> Path:
    path = tmp_path / "f887c9f116649249__0b871d5e50e7c192.jsonl"
    shutil.copy(NEXT / "session_realistic.jsonl", path)
    old = os.stat(path).st_mtime - 60
    os.utime(path, (old, old))
    return path


def hand_off(path: Path, **kw):
    return bub_next_append.handoff(
        path, "ops/dashboard-handoff", {"owner": "tapeview", "summary": "总结: done"}, **kw
    )


def test_bubs_reader_reads_the_tape_after_the_handoff_with_the_new_anchor_last(tape) -> None:
    assert len(bub_scan(tape)) == 169
    written = hand_off(tape)
    records = bub_scan(tape)
    assert len(records) == 170 and written[0]["id"] == 170
    assert last_anchor(records) == (
        170,
        {"name": "ops/dashboard-handoff", "state": {"owner": "tapeview", "summary": "总结: done"}},
    )
    entries = list(bub.scan(tape))
    assert len(entries) == 170 and all(e.readable for e in entries)
    assert entries[-1].is_anchor and entries[-1].name == "ops/dashboard-handoff"
    assert entries[-1].payload["state"]["summary"] == "总结: done"


def test_the_handoff_line_follows_every_rule_of_the_format(tape) -> None:
    before = tape.read_bytes()
    written = hand_off(tape)
    after = tape.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    line = after[len(before) :]
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line.isascii()  # json.dumps' ensure_ascii: the Chinese summary is escaped
    obj = json.loads(line)
    # json.dumps' default separators, as cloudevents' JSONFormat.write encodes
    assert line.rstrip(b"\n") == json.dumps(obj).encode()
    assert list(obj) == [
        "source",
        "datacontenttype",
        "bubcontext",
        "type",
        "time",
        "specversion",
        "id",
        "data",
    ]
    assert obj["type"] == "build.bub.context.anchor.v1"
    assert obj["source"] == "https://bub.build" and obj["datacontenttype"] == "application/json"
    assert obj["specversion"] == "1.0" and obj["bubcontext"] is True
    assert uuid.UUID(obj["id"]).version == 4 and written[0]["event_id"] == obj["id"]
    assert obj["time"].endswith("Z")
    data = obj["data"]
    assert datetime.fromisoformat(data["timestamp"]) == datetime.fromisoformat(obj["time"])
    assert data["timestamp"].endswith("+00:00")
    assert data["step_id"] == 170 and data["source"] == "system" and data["message"] == ""
    assert set(data) == {"step_id", "source", "message", "timestamp", "observation"}
    content = data["observation"]["results"][0]["content"]
    assert isinstance(content, str) and len(data["observation"]["results"]) == 1
    assert content == '{"name":"ops/dashboard-handoff","state":{"owner":"tapeview","summary":"总结: done"}}'
    check_event(obj)
    check_record(data)


def test_a_handoff_is_refused_while_a_turn_is_written_and_nothing_changes(tape) -> None:
    lines = tape.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"source": "user"' in line and i > 100)
    tape.write_bytes(b"".join(lines[: cut + 1]))  # the burst stopped after the user's message
    old = os.stat(tape).st_mtime - 60
    os.utime(tape, (old, old))
    before = tape.read_bytes()
    with pytest.raises(TapeBusy, match="writing a turn"):
        hand_off(tape, quiet_seconds=0, stopped_seconds=3600)
    assert tape.read_bytes() == before
    # still for long: it looks stopped, and only an operator's confirmation writes
    with pytest.raises(AgentStopped):
        hand_off(tape, quiet_seconds=0, stopped_seconds=1)
    hand_off(tape, quiet_seconds=0, stopped_seconds=1, allow_stopped=True)
    assert len(bub_scan(tape)) == cut + 2


def test_a_tape_that_just_changed_waits_for_the_quiet_period(tape) -> None:
    os.utime(tape)
    before = tape.read_bytes()
    with pytest.raises(TapeBusy, match="quiet"):
        hand_off(tape, quiet_seconds=30)
    assert tape.read_bytes() == before


def test_never_after_a_partial_last_line(tmp_path) -> None:
    crash = tmp_path / "a__b.jsonl"
    shutil.copy(NEXT / "crash_truncated_last_line_CRASH.jsonl", crash)
    old = os.stat(crash).st_mtime - 3600
    os.utime(crash, (old, old))
    before = crash.read_bytes()
    for allow in (False, True):
        with pytest.raises(TapeBusy, match="unfinished line"):
            hand_off(crash, quiet_seconds=0, stopped_seconds=1, allow_stopped=allow)
    assert crash.read_bytes() == before
    assert len(bub_scan(crash)) == 168


def test_a_missing_tape_is_never_created(tmp_path) -> None:
    with pytest.raises(TapeNotFound):
        hand_off(tmp_path / "gone__tape.jsonl", quiet_seconds=0)
    assert not (tmp_path / "gone__tape.jsonl").exists()


def test_a_tape_that_moved_since_the_caller_looked_is_not_written(tape) -> None:
    before = tape.read_bytes()
    with pytest.raises(TapeMoved):
        hand_off(tape, after=168)
    assert tape.read_bytes() == before
    hand_off(tape, after=169)
    assert len(bub_scan(tape)) == 170


def test_a_0_5_1_line_last_makes_no_handoff(tape) -> None:
    with tape.open("ab") as f:
        f.write(
            b'{"id": 170, "kind": "anchor", "payload": {"name": "x"}, "meta": {}, "date": "2026-12-01T00:00:00+00:00"}\n'
        )
    old = os.stat(tape).st_mtime - 60
    os.utime(tape, (old, old))
    with pytest.raises(CodecError):
        bub_scan(tape)  # Bub refuses the whole tape
    with pytest.raises(TapeBusy, match="unreadable to Bub"):
        hand_off(tape)
