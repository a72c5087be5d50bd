"""What the end of a live Bub tape says about appending now: idle, busy (retry later) or looks stopped.

Follows ../shared/formats/bub.md §4 rules 4 and 6: a tape is idle when it ends with a newline,
its size has been still for the quiet period and its last entry ends a turn; an unfinished last
line that stays still is a crashed writer's residue. A last entry that ends no turn and has been
still for long says the agent looks stopped: waiting cannot tell a crash from a long model call,
so only an operator's explicit confirmation may write then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from . import python_json
from .bub_lines import parse_line
from .bub_next_lines import FORMAT as NEXT_FORMAT
from .bub_next_lines import ends_turn
from .model import Entry, TapeBusy
from .raw_bytes import open_file, stat_of

BLOCK = 64 * 1024
# How many unreadable lines at the end we step over to find the last entry before giving up.
MAX_LINES_BACK = 64
MID_TURN_RETRY = 2.0
# Asking again soon rarely helps a stopped agent; a turn that does end shows up within a minute.
STOPPED_RETRY = 60.0


@dataclass(frozen=True)
class Tail:
    """What the end of a tape says about appending to it now."""

    ino: int
    dev: int
    size: int
    status: Literal["idle", "busy", "stopped"]
    reason: str
    retry_after: float = 0.0
    residue: bool = False  # an unfinished line from a crashed writer ends the file
    last: Entry | None = None  # the last readable complete entry
    time_field: str = "date"  # "date", "timestamp" or "" (the line format of the tape's era)


def read_tail(path: Path, quiet_seconds: float, stopped_seconds: float, now: Callable[[], float]) -> Tail:
    """The tape's end, read backwards from its last byte. Raises TapeNotFound if the file is gone."""
    f = open_file(path)  # closed below; the stat must be the open file's, the inode we read
    with f:
        st = stat_of(f)
        size, age = st.size, now() - st.mtime
        here = (st.ino, st.dev, size)
        complete_end = _newline_before(f, size) + 1
        residue = complete_end < size
        if residue and age < quiet_seconds * 3:
            reason = "the agent is writing a line (the last line is unfinished)"
            return Tail(*here, "busy", reason, _retry(quiet_seconds * 3 - age))
        if not residue and age < quiet_seconds:
            reason = (
                f"the tape changed {max(age, 0):.1f} s ago; waiting until it has been quiet "
                f"for {quiet_seconds:g} s"
            )
            return Tail(*here, "busy", reason, _retry(quiet_seconds - age))
        last, raw = _last_entry(f, complete_end)
    time_field = _time_field(raw) if raw is not None else "date"
    if residue:
        # A writer died mid-line: the turn it was writing never ended (formats/bub.md §4, rule 4).
        # Waiting cannot tell a crash from a slow writer, so this is busy until it has been still
        # for long; then it looks stopped, and only an operator's confirmation appends (after a
        # newline, so nothing is glued onto the residue).
        if age >= stopped_seconds:
            reason = (
                "the agent looks stopped: an unfinished line from a crash ends the tape and it has been "
                f"still for {_duration(age)}"
            )
            return Tail(*here, "stopped", reason, STOPPED_RETRY, True, last, time_field)
        reason = "an unfinished line ends the tape (a writer crashed mid-turn, or is very slow)"
        return Tail(*here, "busy", reason, MID_TURN_RETRY, True, last, time_field)
    if last is not None and not is_terminal(last):
        if age >= stopped_seconds:
            reason = (
                f"the agent looks stopped: its last entry ({_describe(last)}) ends no turn and the tape "
                f"has been still for {_duration(age)} (a crash mid-turn, or a very long model call)"
            )
            return Tail(*here, "stopped", reason, STOPPED_RETRY, False, last, time_field)
        reason = f"the agent is mid-turn (last entry: {_describe(last)})"
        return Tail(*here, "busy", reason, MID_TURN_RETRY, False, last, time_field)
    reason = "idle" if last is not None else "idle (the tape has no entries)"
    return Tail(*here, "idle", reason, 0.0, False, last, time_field)


def is_terminal(entry: Entry) -> bool:
    """An entry that ends a turn or a command, after which the agent writes nothing until the next."""
    if entry.meta.get("format") == NEXT_FORMAT:  # Bub's next format: the invocation's end
        return ends_turn(entry)
    if entry.kind == "anchor":
        return True
    if entry.kind != "event":
        return False
    data = entry.payload.get("data")
    data = data if isinstance(data, dict) else {}
    if entry.name == "loop.step":
        return data.get("status") in ("ok", "error")
    if entry.name == "loop.step.finish":
        # 0.2.x: with a follow-up, the next step of the same turn comes in the same burst.
        return data.get("followup") is not True
    if entry.name == "run":
        # A turn that fails at the model call ends `system`, `error`, `run` (error), no loop.step (§4).
        return data.get("status") == "error"
    return entry.name in ("command", "handoff", "loop.result")


def _last_entry(f: BinaryIO, end: int) -> tuple[Entry | None, bytes | None]:
    """The last readable complete line before byte `end` (the agent's own last entry), read backwards."""
    for _ in range(MAX_LINES_BACK):
        if end <= 0:
            return None, None
        start = _newline_before(f, end - 1) + 1
        f.seek(start)
        raw = f.read(end - start)
        if len(raw) != end - start:
            raise TapeBusy("the tape shrank while it was being read (a reset?)", 0.5)
        if raw.strip():
            entry = parse_line(raw, 0, start)
            if entry.readable:
                return entry, raw
        end = start
    raise TapeBusy(
        f"no readable entry in the last {MAX_LINES_BACK} lines of the tape: the next id is unknown", 60.0
    )


def _newline_before(f: BinaryIO, pos: int) -> int:
    """The offset of the last newline before byte `pos`, or -1, reading backwards in blocks."""
    while pos > 0:
        step = min(BLOCK, pos)
        f.seek(pos - step)
        block = f.read(step)
        at = block.rfind(b"\n")
        if at >= 0:
            return pos - step + at
        pos -= step
    return -1


def _time_field(raw: bytes) -> str:
    obj = python_json.loads(raw)  # a readable line, perhaps with Bub's NaN or a lone surrogate
    return "date" if "date" in obj else "timestamp" if "timestamp" in obj else ""


def _describe(entry: Entry) -> str:
    if entry.kind == "message" and entry.name:
        return f"message {entry.name}"
    if entry.kind not in ("event", "anchor"):
        return entry.kind
    data = entry.payload.get("data")
    status = data.get("status") if isinstance(data, dict) else None
    return f"{entry.kind} {entry.name}" + (f" ({status})" if isinstance(status, str) else "")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _retry(seconds: float) -> float:
    return max(0.1, round(seconds, 1))
