"""Handoffs written by an operator or a service: an anchor and its handoff event, as Bub writes them."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from tapeview.accounts.audit import Actor, record
from tapeview.sources import bub_append

from . import index
from .models import Tape

MAX_NAME = 200


class HandoffRefused(ValueError):
    """A handoff that cannot be written here (wrong kind of tape, bad name): nothing was written."""


def refusal(tape: Tape) -> str:
    """Why this tape takes no handoff, or "" when it does."""
    if tape.kind == "nanobot":
        return (
            "nanobot sessions have no anchors: nanobot moves its own archive pointer when it consolidates "
            "memory, and it rewrites the session file from memory on its next save, so a line added here "
            "would be lost (formats/nanobot.md §2.7)."
        )
    if tape.kind != "bub":
        return f"{tape.kind} sessions have no anchors to hand off at."
    if tape.role != "tape":
        return f"This is a {tape.role}, not a live tape: the agent never reads it again."
    return ""


def idle_state(tape: Tape) -> tuple[bool, str]:
    """Whether the agent is between turns (a handoff may be written now), and why not."""
    return bub_append.idle_state(Path(tape.path), quiet_seconds=settings.TAPEVIEW_QUIET_SECONDS)


def write(tape: Tape, name: str, actor: Actor, *, summary: str = "", state: dict | None = None) -> list[dict]:
    """Append the anchor + handoff event in one write while the tape is idle (TapeBusy otherwise)."""
    why = refusal(tape)
    if why:
        raise HandoffRefused(why)
    name = (name or "").strip()
    if not name or len(name) > MAX_NAME or "\n" in name:
        raise HandoffRefused(f"a handoff needs a name of 1 to {MAX_NAME} characters on one line")
    full_state = {"owner": actor.name, **({"summary": summary} if summary else {}), **(state or {})}
    written = bub_append.handoff(
        Path(tape.path), name, full_state, quiet_seconds=settings.TAPEVIEW_QUIET_SECONDS
    )
    index.refresh(tape)
    record(
        actor,
        "handoff",
        subject=f"tape:{tape.key}",
        target=f"{tape.source}: {tape.label}",
        after=str(written[-1]["id"]),
        detail={"tape": tape.key, "name": name, "ids": [e["id"] for e in written], "state": full_state},
    )
    return written
