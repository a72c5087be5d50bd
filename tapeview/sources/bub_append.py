"""The guest writer for a live Bub tape: append whole entries only while the agent is idle.

Follows ../shared/formats/bub.md §4: the agent has no locking at all, so we tail-read the file
(bub_tail), append only after a terminal entry and a quiet period, take the last complete line's
id + 1, re-check the size on the very descriptor we write to, and write the whole batch in one
`write()` on a fresh `O_WRONLY|O_APPEND` descriptor, never with `O_CREAT` on a live tape. A write
that fails or falls short is taken back, so the tape is left exactly as it was.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .bub_format import encode as encode  # the writers of zones encode with it too
from .bub_tail import MID_TURN_RETRY, read_tail
from .bub_tail import is_terminal as is_terminal  # imported from here by tests/tapes/agent.py
from .model import AgentStopped, AppendState, TapeBusy, TapeMoved, TapeNotFound, WriteFailed

ORIGIN = "tapeview"
KEYS = ("id", "kind", "payload", "meta")
QUIET_SECONDS = 1.5
# A non-terminal last entry this old says the agent looks stopped (formats/bub.md §4: minutes).
STOPPED_SECONDS = 600.0


def append_state(
    path: Path,
    *,
    quiet_seconds: float = QUIET_SECONDS,
    stopped_seconds: float = STOPPED_SECONDS,
    now: Callable[[], float] = time.time,
) -> AppendState:
    """Whether a guest may append now: idle, busy (retry after a while) or stopped (confirm to write).

    Raises TapeNotFound if the file is gone.
    """
    tail = read_tail(Path(path), quiet_seconds, stopped_seconds, now)
    return AppendState(tail.status, tail.reason, tail.retry_after)


def idle_state(
    path: Path,
    *,
    quiet_seconds: float = QUIET_SECONDS,
    stopped_seconds: float = STOPPED_SECONDS,
    now: Callable[[], float] = time.time,
) -> tuple[bool, str]:
    """Whether a guest may append now, and why (not). Raises TapeNotFound if the file is gone."""
    state = append_state(path, quiet_seconds=quiet_seconds, stopped_seconds=stopped_seconds, now=now)
    return state.idle, state.reason


def append(
    path: Path,
    build: Callable[[int], list[dict]],
    *,
    quiet_seconds: float = QUIET_SECONDS,
    stopped_seconds: float = STOPPED_SECONDS,
    allow_stopped: bool = False,
    now: Callable[[], float] = time.time,
    expect_size: int | None = None,
    create: bool = False,
) -> list[dict]:
    """Append the entries `build(next_id)` returns, in one write, if the tape is idle.

    Raises TapeBusy while the agent is mid-turn or writing, and AgentStopped (a TapeBusy) when it
    looks stopped, unless `allow_stopped` (an operator's explicit, audited confirmation).
    `expect_size`: refuse (TapeBusy) unless the file still has the size the caller read it at,
    for callers that decide what to write from more than the tail. `create`: a missing file is
    created with O_CREAT|O_EXCL; only for our own files (a memory sidecar), never a live tape.
    Raises WriteFailed when the write fails or falls short (the tape is then cut back).
    Returns the entries as written: on a tape of an era without `date` the time field follows
    the tape (none, or a float `timestamp` taken at write time as bub 0.2.3 did).
    """
    path = Path(path)
    try:
        tail = read_tail(path, quiet_seconds, stopped_seconds, now)
    except TapeNotFound:
        if not create:
            raise
        return _create(path, build, expect_size)
    if tail.status == "stopped" and not allow_stopped:
        raise AgentStopped(tail.reason, tail.retry_after)
    if tail.status == "busy":
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
    append_unchanged(path, buf, tail.ino, tail.size, "the entries were prepared", MID_TURN_RETRY)
    return entries


def append_unchanged(path: Path, buf: bytes, ino: int, size: int, prepared: str, retry: float) -> None:
    """`buf` in one write() at the end of `path`, only if it is still the file (inode and size) that
    was read while `prepared`; TapeBusy otherwise."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)  # no O_CREAT: a reset may have just unlinked it
    except FileNotFoundError as exc:
        raise TapeNotFound(str(path)) from exc
    try:
        st = os.fstat(fd)
        if st.st_ino != ino:
            raise TapeBusy(f"the tape was reset while {prepared}", 0.5)
        if st.st_size != size:
            raise TapeBusy(f"the agent wrote to the tape while {prepared}", retry)
        _write_all(fd, buf, path, size)
    finally:
        os.close(fd)


def handoff(
    path: Path,
    name: str,
    state: dict[str, Any] | None,
    *,
    now_iso: str | None = None,
    quiet_seconds: float = QUIET_SECONDS,
    stopped_seconds: float = STOPPED_SECONDS,
    allow_stopped: bool = False,
    now: Callable[[], float] = time.time,
    after: int | None = None,
) -> list[dict]:
    """Append an anchor and its `handoff` event, as Bub's `tape.handoff` writes them, in one write.

    `allow_stopped`: write even when the agent looks stopped (see `append`); TapeBusy still
    comes when it is really mid-turn and recently active. `after`: the id of the entry the caller
    saw last; TapeMoved, nothing written, when the idle tape's last entry is another (0: none).
    """
    date = now_iso or datetime.now(UTC).isoformat()
    meta = {"origin": ORIGIN}
    anchor_payload: dict[str, Any] = {"name": name}
    if state is not None:
        anchor_payload["state"] = state

    def build(nid: int) -> list[dict]:
        if after is not None and nid - 1 != after:
            raise TapeMoved(after, nid - 1)
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

    return append(
        path,
        build,
        quiet_seconds=quiet_seconds,
        stopped_seconds=stopped_seconds,
        allow_stopped=allow_stopped,
        now=now,
    )


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
        _write_all(fd, buf, path, 0)
    except WriteFailed as exc:
        if exc.rolled_back:
            _remove_if_ours(fd, path)  # the file did not exist before: leave none behind
        raise
    finally:
        os.close(fd)
    return entries


def _write_all(fd: int, buf: bytes, path: Path, size: int) -> None:
    """One write() of the whole batch on a file of `size` bytes; WriteFailed if it does not all land.

    One syscall, so no agent line can land between ours. A full disk or an I/O error can still
    leave part of the batch behind (7,470 of 40,400 bytes, no newline): half a line the agent
    would glue its next entry onto. It is never retried (a second write() could land after an
    agent line): it is taken back, so the tape is exactly as it was, and reported.
    """
    try:
        written = os.write(fd, buf)
    except OSError as exc:
        why, code = exc.strerror or str(exc), exc.errno
    else:
        if written == len(buf):
            return
        why, code = f"only {written:,} of {len(buf):,} bytes were written", None
    kept = _roll_back(fd, path, size, buf)
    if not kept:
        raise WriteFailed(
            f"the write to the tape failed ({why}); the tape was cut back to its {size:,} bytes: "
            "nothing was written",
            errno=code,
        )
    raise WriteFailed(
        f"the write to the tape failed ({why}) and the part that reached it could not be taken back "
        f"({kept}): the tape now ends with an unfinished line, as after a crash",
        errno=code,
        rolled_back=False,
    )


def _roll_back(fd: int, path: Path, size: int, buf: bytes) -> str:
    """Cut our partial bytes off the tape again: "" when the tape is as it was, else why not.

    The rule: truncate back to `size`, the size fstat showed on this very descriptor just before
    the write, only when
    1. the path still names the inode we wrote to: after a reset the new tape holds none of our
       bytes, and the old inode is an archive or gone, so neither is ours to change;
    2. the file is no shorter than `size` (someone else shrank it: not ours to regrow); and
    3. everything past `size` is a prefix of our buffer: nobody appended after our partial bytes,
       since an agent line there would be cut off with them.
    Otherwise the file is left alone, and the partial line stays as crash residue, which readers
    show as unreadable and the next guest write closes with a newline (§4 rule 6).
    Truncating bends "never truncate a live tape" (§4 rule 1) only for bytes that were ours and
    that no entry includes; an agent that already read past them sees the file shrink and rereads
    it from the start, as after a reset (§3). The agent could still append between our check and
    the truncate: the same few-microsecond window §4 describes for the append itself.
    """
    try:
        st = os.fstat(fd)
        if st.st_size == size:
            return ""
        if st.st_size < size:
            return "the tape shrank meanwhile"
        with open(path, "rb") as f:
            named = os.fstat(f.fileno())
            if (named.st_dev, named.st_ino) != (st.st_dev, st.st_ino):
                return "the tape was reset meanwhile"
            f.seek(size)
            ours = f.read(len(buf) + 1)
        if not buf.startswith(ours) or os.fstat(fd).st_size != size + len(ours):
            return "another writer appended after them"
        os.ftruncate(fd, size)
    except OSError as exc:
        return f"cutting back failed: {exc.strerror or exc}"
    return ""


def _remove_if_ours(fd: int, path: Path) -> None:
    try:
        st, named = os.fstat(fd), os.stat(path)
        if (named.st_dev, named.st_ino) == (st.st_dev, st.st_ino) and named.st_size == 0:
            os.unlink(path)
    except OSError:
        pass  # an empty file left behind reads as a tape with no entries: harmless
