"""The guest writer for a live Bub tape: append whole entries only while the agent is idle.

Follows ../shared/formats/bub.md §4: the agent has no locking at all, so we tail-read the file,
append only after a terminal entry and a quiet period, take the last complete line's id + 1,
re-check the size on the very descriptor we write to, and write the whole batch in one
`write()` on a fresh `O_WRONLY|O_APPEND` descriptor, never with `O_CREAT` on a live tape.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from .bub import parse_line
from .model import Entry, TapeBusy, TapeNotFound

ORIGIN = "tapeview"
BLOCK = 64 * 1024
# How many unreadable lines at the end we step over to find the last entry before giving up.
MAX_LINES_BACK = 64
MID_TURN_RETRY = 2.0
KEYS = ("id", "kind", "payload", "meta")


@dataclass(frozen=True)
class _Tail:
    """What the end of a tape says about appending to it now."""

    ino: int
    size: int
    idle: bool
    reason: str
    retry_after: float = 0.0
    residue: bool = False  # an unfinished line from a crashed writer ends the file
    last: Entry | None = None  # the last readable complete entry
    time_field: str = "date"  # "date", "timestamp" or "" (the line format of the tape's era)


def idle_state(
    path: Path, *, quiet_seconds: float = 1.5, now: Callable[[], float] = time.time
) -> tuple[bool, str]:
    """Whether a guest may append now, and why (not). Raises TapeNotFound if the file is gone."""
    tail = _inspect(Path(path), quiet_seconds, now)
    return tail.idle, tail.reason


def append(
    path: Path,
    build: Callable[[int], list[dict]],
    *,
    quiet_seconds: float = 1.5,
    now: Callable[[], float] = time.time,
    expect_size: int | None = None,
    create: bool = False,
) -> list[dict]:
    """Append the entries `build(next_id)` returns, in one write, if the tape is idle.

    `expect_size`: refuse (TapeBusy) unless the file still has the size the caller read it at,
    for callers that decide what to write from more than the tail. `create`: a missing file is
    created with O_CREAT|O_EXCL; only for our own files (a memory sidecar), never a live tape.
    Returns the entries as written: on a tape of an era without `date` the time field follows
    the tape (none, or a float `timestamp` taken at write time as bub 0.2.3 did).
    """
    path = Path(path)
    try:
        tail = _inspect(path, quiet_seconds, now)
    except TapeNotFound:
        if not create:
            raise
        return _create(path, build, expect_size)
    if not tail.idle:
        raise TapeBusy(tail.reason, tail.retry_after)
    if expect_size is not None and tail.size != expect_size:
        raise TapeBusy("the tape changed while it was being read", 0.5)
    next_id = tail.last.id + 1 if tail.last is not None else 1
    entries = [_in_era(e, tail.time_field, now) for e in _checked(build(next_id), next_id)]
    if not entries:
        return []
    buf = encode(entries)
    if tail.residue:
        # Close the crashed writer's line so ours is not glued onto it (§4 rule 6).
        buf = b"\n" + buf
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # no O_CREAT: a reset may have just unlinked it
    except FileNotFoundError as exc:
        raise TapeNotFound(str(path)) from exc
    try:
        st = os.fstat(fd)
        if st.st_ino != tail.ino:
            raise TapeBusy("the tape was reset while the entries were prepared", 0.5)
        if st.st_size != tail.size:
            raise TapeBusy("the agent wrote to the tape while the entries were prepared", MID_TURN_RETRY)
        _write_all(fd, buf)
    finally:
        os.close(fd)
    return entries


def handoff(
    path: Path,
    name: str,
    state: dict[str, Any] | None,
    *,
    now_iso: str | None = None,
    quiet_seconds: float = 1.5,
    now: Callable[[], float] = time.time,
) -> list[dict]:
    """Append an anchor and its `handoff` event, as Bub's `tape.handoff` writes them, in one write."""
    date = now_iso or datetime.now(UTC).isoformat()
    meta = {"origin": ORIGIN}
    anchor_payload: dict[str, Any] = {"name": name}
    if state is not None:
        anchor_payload["state"] = state

    def build(nid: int) -> list[dict]:
        return [
            {"id": nid, "kind": "anchor", "payload": anchor_payload, "meta": meta, "date": date},
            {
                "id": nid + 1,
                "kind": "event",
                "payload": {"name": "handoff", "data": {"name": name, "state": state or {}}},
                "meta": meta,
                "date": date,
            },
        ]

    return append(path, build, quiet_seconds=quiet_seconds, now=now)


def encode(entries: list[dict]) -> bytes:
    """Lines exactly as Bub writes them: default separators, raw UTF-8, one newline each."""
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries).encode("utf-8")


def is_terminal(entry: Entry) -> bool:
    """An entry that ends a turn or a command, after which the agent writes nothing until the next."""
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
    return entry.name in ("command", "handoff", "loop.result")


def _inspect(path: Path, quiet_seconds: float, now: Callable[[], float]) -> _Tail:
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below; fstat must see the inode we read
    except FileNotFoundError as exc:
        raise TapeNotFound(str(path)) from exc
    with f:
        st = os.fstat(f.fileno())
        size, age = st.st_size, now() - st.st_mtime
        complete_end = _newline_before(f, size) + 1
        residue = complete_end < size
        if residue and age < quiet_seconds * 3:
            return _Tail(
                st.st_ino,
                size,
                False,
                "the agent is writing a line (the last line is unfinished)",
                _retry(quiet_seconds * 3 - age),
            )
        if not residue and age < quiet_seconds:
            return _Tail(
                st.st_ino,
                size,
                False,
                f"the tape changed {max(age, 0):.1f} s ago; waiting until it has been quiet "
                f"for {quiet_seconds:g} s",
                _retry(quiet_seconds - age),
            )
        last, raw = _last_entry(f, complete_end)
    time_field = _time_field(raw) if raw is not None else "date"
    if residue:
        # The writer died mid-line and nothing grew since, so no burst is in progress.
        reason = "idle (an unfinished line from a crash ends the tape: the new entries start on a new line)"
        return _Tail(st.st_ino, size, True, reason, 0.0, True, last, time_field)
    if last is not None and not is_terminal(last):
        reason = f"the agent is mid-turn (last entry: {_describe(last)})"
        return _Tail(st.st_ino, size, False, reason, MID_TURN_RETRY, False, last, time_field)
    reason = "idle" if last is not None else "idle (the tape has no entries)"
    return _Tail(st.st_ino, size, True, reason, 0.0, False, last, time_field)


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
    obj = orjson.loads(raw)
    return "date" if "date" in obj else "timestamp" if "timestamp" in obj else ""


def _checked(entries: list[dict], next_id: int) -> list[dict]:
    out = []
    for i, e in enumerate(entries):
        if e.get("id") != next_id + i:
            raise ValueError(f"entry {i} has id {e.get('id')!r}, expected {next_id + i}")
        # Rebuilt so the keys are in the agent's order whatever order the builder used.
        line = {k: e[k] if k != "meta" else e.get("meta", {}) for k in KEYS}
        if "date" in e:
            line["date"] = e["date"]
        out.append(line)
    return out


def _in_era(entry: dict, time_field: str, now: Callable[[], float]) -> dict:
    if time_field == "date":
        return entry
    entry = {k: v for k, v in entry.items() if k != "date"}
    if time_field == "timestamp":
        entry["timestamp"] = now()
    return entry


def _create(path: Path, build: Callable[[int], list[dict]], expect_size: int | None) -> list[dict]:
    if expect_size:
        raise TapeBusy("the file disappeared while it was being read", 0.5)
    entries = _checked(build(1), 1)
    if not entries:
        return []
    buf = encode(entries)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
    except FileExistsError as exc:
        raise TapeBusy("another writer created the file meanwhile", 0.5) from exc
    try:
        _write_all(fd, buf)
    finally:
        os.close(fd)
    return entries


def _write_all(fd: int, buf: bytes) -> None:
    # One syscall, so no agent line can land between ours; a short write leaves crash residue,
    # which the next writer closes with a newline. It is never retried or truncated away.
    written = os.write(fd, buf)
    if written != len(buf):
        raise OSError(f"short write: {written} of {len(buf)} bytes reached the tape")


def _describe(entry: Entry) -> str:
    if entry.kind not in ("event", "anchor"):
        return entry.kind
    data = entry.payload.get("data")
    status = data.get("status") if isinstance(data, dict) else None
    return f"{entry.kind} {entry.name}" + (f" ({status})" if isinstance(status, str) else "")


def _retry(seconds: float) -> float:
    return max(0.1, round(seconds, 1))
