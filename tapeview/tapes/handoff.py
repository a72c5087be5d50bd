"""Handoffs written by an operator or a service, in the tape's own line format, as Bub writes them."""

from __future__ import annotations

import fcntl
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError

from tapeview.accounts.audit import Actor, record
from tapeview.sources import AppendState, TapeMoved, bub, bub_append, bub_next, bub_next_append
from tapeview.sources.bub_lines import NON_PHASE_PREFIXES

from . import index
from . import rows as index_rows
from .models import Tape

MAX_NAME = 200
# Why a family that has anchors of its own takes none from here (they are what the header counts).
NO_HANDOFF = {
    "nanobot": (
        "their anchors are nanobot's own cuts of the model's context (a summary checkpoint, or the row its "
        "archive pointer names), made by nanobot when it compacts, and nanobot rewrites the session file "
        "from memory on its next save, so a line added here would be lost."
    ),
    "yachiyo": (
        "their anchors are the runs yachiyo's gateway records, yachiyo has no record a handoff could add, "
        "and its gateway rewrites the whole session file on every event, so a line added here would be "
        "lost."
    ),
}

log = logging.getLogger(__name__)


class HandoffRefused(ValueError):
    """A handoff that cannot be written here (wrong kind of tape, bad name): nothing was written."""


class HandoffStale(Exception):
    """The tape's end moved since the one handing off looked at it (another handoff, the agent's
    turn, a reset): what they saw is not what the handoff would cut. Nothing was written."""

    def __init__(self, seen: int, now: int) -> None:
        self.seen, self.now = seen, now
        if now > seen:
            n = now - seen
            what = f"{n} entr{'y was' if n == 1 else 'ies were'} written after id {seen}"
        else:
            what = f"it ended at id {seen} and ends at id {now} now (reset or cut)"
        super().__init__(
            f"The tape changed since you looked at it: {what}. Nothing was written: look at the "
            "context again, and send once more to hand off after what is there now."
        )


def refusal(tape: Tape) -> str:
    """Why this tape takes no handoff, or "" when it does."""
    if tape.kind in NO_HANDOFF:
        return f"{tape.kind} sessions take no handoff: {NO_HANDOFF[tape.kind]}"
    if tape.kind != "bub":
        return (
            f"{tape.kind} sessions take no handoff: {tape.kind} keeps no anchors, and a handoff is "
            "written only as Bub writes one."
        )
    if tape.role != "tape":
        return f"This is a {tape.role}, not a live tape: the agent never reads it again."
    if bub.named_by_0_2(Path(tape.path)):
        return (
            "This tape was named by Bub 0.2: Bub 0.3 and later name their tapes anew and never open this "
            "file again, so a handoff here would reach no agent."
        )
    return ""


def append_state(tape: Tape) -> AppendState:
    """Whether the agent is between turns (a handoff may be written now), mid-turn, or looks stopped."""
    return _writer(tape).append_state(Path(tape.path), **_timing())


def _writer(tape: Tape):
    """The guest writer of the tape's own line format: a 0.5.1 tape keeps getting 0.5.1 handoffs."""
    return bub_next_append if bub_next.file_format(tape.path) == bub_next.FORMAT else bub_append


def last_id(tape: Tape) -> int:
    """The id of the last readable entry the index holds of the tape (0: none): the end of what its
    pages show, which a handoff is written after."""
    last = index_rows.of(tape).where(readable=True).tail(1)
    return (last[0].entry_id or 0) if last else 0


def _timing() -> dict:
    return {
        "quiet_seconds": settings.TAPEVIEW_QUIET_SECONDS,
        "stopped_seconds": settings.TAPEVIEW_STOPPED_SECONDS,
    }


@contextmanager
def _one_writer(tape: Tape) -> Iterator[None]:
    """Tapeview's own writers to one tape take turns (the agent is kept out by the idle rule)."""
    locks = settings.HOME / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / f"tape-{tape.key}.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def write(
    tape: Tape,
    name: str,
    actor: Actor,
    *,
    summary: str = "",
    state: dict | None = None,
    confirm_stopped: bool = False,
    after: int | None = None,
) -> list[dict]:
    """Append a handoff in the tape's own format (0.5.1: an anchor and its handoff event; the next
    release's: one context.anchor line) in one write while the tape is idle (TapeBusy otherwise).

    A tape whose agent looks stopped mid-turn raises AgentStopped, unless the operator confirmed
    the handoff (`confirm_stopped`): then it is written, and the audit row says it was confirmed.
    `after`: the id of the last entry the caller saw; HandoffStale when the tape ends elsewhere now
    (two operators handing off from the same view: the second is told, not written after the first).
    """
    why = refusal(tape)
    if why:
        raise HandoffRefused(why)
    name = (name or "").strip()
    if not name or len(name) > MAX_NAME or "\n" in name:
        raise HandoffRefused(f"a handoff needs a name of 1 to {MAX_NAME} characters on one line")
    if name.startswith(NON_PHASE_PREFIXES):
        # Bub's own records (its memory zone, a spilled result's pieces) use these names: an operator's
        # anchor named so would be read as one of them, and would start no phase.
        raise HandoffRefused(
            f"a handoff's name may not start with {' or '.join(NON_PHASE_PREFIXES)}: Bub keeps those names "
            "for its memory and its spilled results"
        )
    # Who wrote it is not the caller's to say: the owner comes last, over any given in `state`.
    full_state = {**({"summary": summary} if summary else {}), **(state or {}), "owner": actor.name}
    with _one_writer(tape):
        try:
            written = _writer(tape).handoff(
                Path(tape.path), name, full_state, allow_stopped=confirm_stopped, after=after, **_timing()
            )
        except TapeMoved as moved:  # checked on the idle tape's end, after the busy rule
            raise HandoffStale(moved.seen, moved.now) from None
        except ValueError as exc:  # a state Bub's line cannot hold as it reads it back: nothing written
            raise HandoffRefused(str(exc)) from None
    # From here on the handoff is on the tape: nothing may report it as not written, or a client
    # that retries writes a second anchor. So the audit row comes first, and nothing raises after.
    detail = {"tape": tape.key, "name": name, "ids": [e["id"] for e in written], "state": full_state}
    if confirm_stopped:
        detail["confirmed_stopped"] = True
    try:
        record(
            actor,
            "handoff",
            subject=f"tape:{tape.key}",
            target=f"{tape.source}: {tape.label}",
            after=str(written[-1]["id"]),
            detail=detail,
        )
    except DatabaseError:
        # The database failed just now: the log keeps what the row would have said.
        log.exception("handoff written to %s by %s; its audit row failed: %s", tape.path, actor.name, detail)
    try:
        # Wait a little for an indexer busy with this tape, so the answer can show the new entries;
        # if they are not indexed yet, the next request indexes them.
        index.refresh(tape, wait=index.AFTER_WRITE)
    except Exception:
        log.exception("handoff written to %s; indexing it is left to the next request", tape.path)
    return written
