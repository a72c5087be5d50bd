"""The guest writer for a live tape in Bub's next format: one `context.anchor` line, only while idle.

Follows ../shared/formats/bub-next.md §7 and §9: Bub appends without any lock, keeps a whole turn in
memory and writes it in one burst at the turn's end, truncates an unfinished last line at its next
append, and refuses a whole tape for one bad line. So the handoff is exactly the line Bub's
`anchor_event` + `TapeFile.append` would write, encoded as `JSONFormat.write` encodes it, written in
one `write()` on `O_WRONLY|O_APPEND` (no `O_CREAT`) only when the file ends with a newline, its size
is still and its last line ends an invocation.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from .bub_append import QUIET_SECONDS, STOPPED_SECONDS, append_unchanged
from .bub_next_lines import ANCHOR_TYPE, ends_turn, parse_line
from .model import AgentStopped, AppendState, TapeBusy, TapeMoved
from .raw_bytes import open_file, stat_of

BLOCK = 1 << 20
MID_TURN_RETRY = 2.0
STOPPED_RETRY = 60.0


@dataclass(frozen=True)
class Tail:
    """The end of a tape in Bub's next format, as a guest writer needs it."""

    ino: int
    size: int
    status: Literal["idle", "busy", "stopped"]
    reason: str
    retry_after: float = 0.0
    lines: int = 0  # complete lines (blank ones too): the new line's position is lines + 1
    records: int = 0  # complete non-empty lines: Bub's cursor, so its step_id is records + 1


def read_tail(path: Path, quiet_seconds: float, stopped_seconds: float, now: Callable[[], float]) -> Tail:
    """The tape's end and its line counts. Raises TapeNotFound if the file is gone."""
    with open_file(path) as f:
        st = stat_of(f)
        age = now() - st.mtime
        data_end, lines, records, last = _count(f, st.size)
    here = (st.ino, st.size)
    if data_end < st.size:
        # Never written after: the residue would become a complete bad line, and Bub would refuse the
        # whole tape. Bub's own next append truncates it away (formats/bub-next.md §7, §9 rule 6).
        reason = (
            "an unfinished line ends the tape (the agent is writing, or crashed): Bub cuts it off at its "
            "next append, and nothing may be written after it until then"
        )
        return Tail(*here, "busy", reason, max(quiet_seconds, MID_TURN_RETRY), lines, records)
    if age < quiet_seconds:
        quiet = f"{quiet_seconds:g} s"
        reason = f"the tape changed {max(age, 0):.1f} s ago; waiting until it has been quiet for {quiet}"
        return Tail(*here, "busy", reason, max(0.1, round(quiet_seconds - age, 1)), lines, records)
    if last is None:
        return Tail(*here, "idle", "idle (the tape has no entries)", 0.0, lines, records)
    entry = parse_line(last, lines, 0)
    if not entry.readable:
        reason = f"the tape's last line is unreadable to Bub ({entry.problem}): nothing is written after it"
        return Tail(*here, "busy", reason, STOPPED_RETRY, lines, records)
    if ends_turn(entry):
        return Tail(*here, "idle", "idle", 0.0, lines, records)
    what = f"its last line is {entry.name or entry.kind}, not the end of an invocation"
    if age >= stopped_seconds:
        reason = (
            f"the agent looks stopped: {what}, and the tape has been still for {age / 60:.0f} min "
            "(a crash while it wrote a turn)"
        )
        return Tail(*here, "stopped", reason, STOPPED_RETRY, lines, records)
    return Tail(*here, "busy", f"the agent is writing a turn ({what})", MID_TURN_RETRY, lines, records)


def append_state(
    path: Path,
    *,
    quiet_seconds: float = QUIET_SECONDS,
    stopped_seconds: float = STOPPED_SECONDS,
    now: Callable[[], float] = time.time,
) -> AppendState:
    """Whether a guest may append now. Raises TapeNotFound if the file is gone."""
    tail = read_tail(Path(path), quiet_seconds, stopped_seconds, now)
    return AppendState(tail.status, tail.reason, tail.retry_after)


def anchor_line(name: str, state: dict[str, Any], step_id: int, when: datetime) -> bytes:
    """The line Bub's `anchor_event(name, state)` + `TapeFile.append` write (§9), newline included."""
    content = json.dumps({"name": name, "state": state}, ensure_ascii=False, separators=(",", ":"))
    event = {
        "source": "https://bub.build",
        "datacontenttype": "application/json",
        "bubcontext": True,
        "type": ANCHOR_TYPE,
        "time": when.isoformat().replace("+00:00", "Z"),
        "specversion": "1.0",
        "id": str(uuid.uuid4()),
        "data": {
            "step_id": step_id,
            "source": "system",
            "message": "",
            "timestamp": when.isoformat(),
            "observation": {"results": [{"content": content}]},
        },
    }
    try:
        return (json.dumps(event, allow_nan=False) + "\n").encode("utf-8")
    except (ValueError, TypeError, RecursionError) as exc:
        raise ValueError(f"the handoff's state cannot be written as Bub reads it back: {exc}") from None


def handoff(
    path: Path,
    name: str,
    state: dict[str, Any] | None,
    *,
    quiet_seconds: float = QUIET_SECONDS,
    stopped_seconds: float = STOPPED_SECONDS,
    allow_stopped: bool = False,
    now: Callable[[], float] = time.time,
    after: int | None = None,
    when: datetime | None = None,
) -> list[dict]:
    """Append one `context.anchor` line named `name` with `state` while the tape is idle.

    TapeBusy mid-turn or while a line is unfinished, AgentStopped (unless `allow_stopped`) when the
    agent looks stopped mid-burst; TapeMoved when the tape's last line is no longer at `after` (the
    position the caller saw last); WriteFailed when the write falls short (then it is taken back).
    Returns `[{"id": position, "event_id": uuid, "payload": {"name", "state"}}]` of the line written.
    """
    path = Path(path)
    tail = read_tail(path, quiet_seconds, stopped_seconds, now)
    if tail.status == "stopped" and not allow_stopped:
        raise AgentStopped(tail.reason, tail.retry_after)
    if tail.status == "busy":
        raise TapeBusy(tail.reason, tail.retry_after)
    if after is not None and tail.lines != after:
        raise TapeMoved(after, tail.lines)
    line = anchor_line(name, state or {}, tail.records + 1, when or datetime.now(UTC))
    written = parse_line(line, tail.lines + 1, tail.size)
    if not written.is_anchor or written.name != name:  # a line Bub would refuse bricks the whole tape
        raise ValueError(f"the handoff would not read back as an anchor: {written.problem or written.name}")
    append_unchanged(path, line, tail.ino, tail.size, "the handoff was prepared", MID_TURN_RETRY)
    return [{"id": tail.lines + 1, "event_id": written.meta["event_id"], "payload": written.payload}]


def _count(f, size: int) -> tuple[int, int, int, bytes | None]:
    """(end of the last complete line, complete lines, non-empty ones, the last non-empty one) of
    the file's first `size` bytes, read a block at a time."""
    f.seek(0)
    lines = records = done = 0
    last: bytes | None = None
    rest = b""
    while done < size:
        block = f.read(min(BLOCK, size - done))
        if not block:
            raise TapeBusy("the tape shrank while it was being read (a reset?)", 0.5)
        done += len(block)
        data = rest + block
        cut = data.rfind(b"\n") + 1
        rest = data[cut:]
        filled = [line for line in data[: cut - 1].split(b"\n") if line.strip()] if cut else []
        lines += data.count(b"\n", 0, cut)
        records += len(filled)
        last = filled[-1] if filled else last
    return size - len(rest), lines, records, last
