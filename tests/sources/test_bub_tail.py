"""Three states of a live Bub tape's end: idle, busy (retry later) and "looks stopped" (an operator may confirm)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tapeview.sources.bub import scan
from tapeview.sources.bub_append import append_state, handoff, idle_state
from tapeview.sources.model import AgentStopped, AppendState, TapeBusy

MTIME = 1_800_000_000.0  # when the tape last changed
DATE = "2027-01-15T08:00:00+00:00"
RUN = {"run_id": "run-1"}


def line(id: int, kind: str, payload: dict, meta: dict | None = None) -> str:
    entry = {"id": id, "kind": kind, "payload": payload, "meta": meta or {}, "date": DATE}
    return json.dumps(entry, ensure_ascii=False) + "\n"


def event(id: int, name: str, **data: object) -> str:
    return line(id, "event", {"name": name, "data": data})


TURN_DONE = [
    line(1, "message", {"role": "user", "content": "hi"}, RUN),
    line(2, "message", {"role": "assistant", "content": "hello"}, RUN),
    event(3, "run", status="ok"),
    event(4, "loop.step", step=1, status="ok"),
]
# formats/bub.md §4: a turn that fails at the model call ends so, with no loop.step.
MODEL_CALL_FAILED = [
    *TURN_DONE,
    line(5, "system", {"content": "(system prompt)"}, RUN),
    line(6, "error", {"kind": "not_found", "message": "Anchor 'phase/missing' was not found."}, RUN),
    event(7, "run", status="error", model="openai:gpt-4.1-mini"),
]
# The agent took the user's message and died before its turn-end burst.
CRASHED_AFTER_USER = [
    *TURN_DONE,
    line(5, "system", {"content": "(system prompt)"}, RUN),
    line(6, "message", {"role": "user", "content": "and now?"}, RUN),
]


def tape(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "9d11f561157e98d3__0b871d5e50e7c192.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    os.utime(path, (MTIME, MTIME))
    return path


def at(seconds_later: float):
    return lambda: MTIME + seconds_later


@pytest.mark.parametrize(
    ("lines", "later", "status", "reason"),
    [
        (TURN_DONE, 5, "idle", "idle"),
        (TURN_DONE, 0.5, "busy", "the tape changed 0.5 s ago; waiting until it has been quiet for 1.5 s"),
        (MODEL_CALL_FAILED, 5, "idle", "idle"),
        (MODEL_CALL_FAILED, 3600, "idle", "idle"),
        (
            MODEL_CALL_FAILED,
            1,
            "busy",
            "the tape changed 1.0 s ago; waiting until it has been quiet for 1.5 s",
        ),
        (CRASHED_AFTER_USER, 5, "busy", "the agent is mid-turn (last entry: message user)"),
        (CRASHED_AFTER_USER, 599, "busy", "the agent is mid-turn (last entry: message user)"),
        (
            CRASHED_AFTER_USER,
            600,
            "stopped",
            "the agent looks stopped: its last entry (message user) ends no turn and the tape has been "
            "still for 10 min (a crash mid-turn, or a very long model call)",
        ),
        (
            [*TURN_DONE, line(5, "tool_call", {"calls": []}, RUN)],
            3 * 3600,
            "stopped",
            "the agent looks stopped: its last entry (tool_call) ends no turn and the tape has been "
            "still for 3.0 h (a crash mid-turn, or a very long model call)",
        ),
    ],
    ids=[
        "done",
        "done_but_fresh",
        "model_call_failed",
        "model_call_failed_long_ago",
        "model_call_failed_fresh",
        "user_message_recent",
        "user_message_almost_stopped",
        "user_message_long_ago",
        "tool_call_hours_ago",
    ],
)
def test_the_tapes_end_says_idle_busy_or_stopped(
    tmp_path: Path, lines: list[str], later: float, status: str, reason: str
) -> None:
    path = tape(tmp_path, lines)

    state = append_state(path, quiet_seconds=1.5, now=at(later))

    assert (state.status, state.reason) == (status, reason)
    assert state.idle is (status == "idle")
    assert idle_state(path, quiet_seconds=1.5, now=at(later)) == (status == "idle", reason)


def test_retry_hints_are_short_while_busy_and_long_once_stopped(tmp_path: Path) -> None:
    path = tape(tmp_path, CRASHED_AFTER_USER)

    busy = append_state(path, now=at(5))
    stopped = append_state(path, now=at(700))

    assert busy == AppendState("busy", busy.reason, 2.0)
    assert stopped.status == "stopped" and stopped.retry_after == 60.0


def test_stopped_seconds_sets_how_long_a_mid_turn_tape_must_be_still(tmp_path: Path) -> None:
    path = tape(tmp_path, CRASHED_AFTER_USER)

    assert append_state(path, stopped_seconds=60, now=at(59)).status == "busy"
    assert append_state(path, stopped_seconds=60, now=at(61)).status == "stopped"
    assert idle_state(path, stopped_seconds=60, now=at(61))[0] is False


def test_a_stopped_tape_gets_no_handoff_without_confirmation(tmp_path: Path) -> None:
    path = tape(tmp_path, CRASHED_AFTER_USER)
    before = path.read_bytes()

    with pytest.raises(AgentStopped) as stopped:
        handoff(path, "phase/recover", {}, now_iso=DATE, now=at(3600))

    assert isinstance(stopped.value, TapeBusy)  # callers that map TapeBusy to 409 keep working
    assert "looks stopped" in str(stopped.value) and stopped.value.retry_after == 60.0
    assert path.read_bytes() == before


def test_a_confirmed_handoff_on_a_stopped_tape_is_written(tmp_path: Path) -> None:
    path = tape(tmp_path, CRASHED_AFTER_USER)
    before = path.read_bytes()

    written = handoff(
        path,
        "phase/recover",
        {"summary": "the agent crashed"},
        now_iso=DATE,
        now=at(3600),
        allow_stopped=True,
    )

    assert [e["id"] for e in written] == [7, 8]
    assert path.read_bytes().startswith(before)
    assert [(e.id, e.kind, e.name) for e in list(scan(path))[-2:]] == [
        (7, "anchor", "phase/recover"),
        (8, "event", "handoff"),
    ]


@pytest.mark.parametrize("later", [0.5, 5, 599], ids=["changing", "mid_turn", "almost_stopped"])
def test_confirmation_does_not_override_a_tape_that_is_really_busy(tmp_path: Path, later: float) -> None:
    path = tape(tmp_path, CRASHED_AFTER_USER)
    before = path.read_bytes()

    with pytest.raises(TapeBusy) as busy:
        handoff(path, "phase/x", {}, now_iso=DATE, now=at(later), allow_stopped=True)

    assert not isinstance(busy.value, AgentStopped)
    assert path.read_bytes() == before


def test_a_confirmed_handoff_on_an_idle_tape_is_written_as_usual(tmp_path: Path) -> None:
    path = tape(tmp_path, MODEL_CALL_FAILED)

    written = handoff(path, "phase/after-error", {}, now_iso=DATE, now=at(5), allow_stopped=True)

    assert [e["id"] for e in written] == [8, 9]
