"""Per-phase statistics counted while a tape is indexed, and its context figures since its last anchor.

A phase runs from one phase anchor to the next (Bub anchors and handoffs, yachiyo runs, nanobot's
context cuts); the span before the first one is phase 0, kept as a dict on the Tape (`lead_phase`),
the others on their Anchor rows. The counts go on batch by batch, so no request ever reads a whole
tape for them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from tapeview.sources import Entry, reader
from tapeview.sources.bub_next_lines import FORMAT as NEXT_FORMAT

from . import bulk
from .bulk import AnchorRow
from .models import Anchor, Tape

STATS = (
    "entries",
    "end_pos",
    "started_at",
    "ended_at",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "tool_calls",
    "errors",
    "model",
    "roles",
)
DATES = ("started_at", "ended_at")
OVERFLOW_ANCHOR = "auto_handoff/context_overflow"
# What a provider's context-length refusal says, in an error entry (formats/bub.md §2.1).
OVERFLOW_WORDS = (b"context_length_exceeded", b"maximum context length", b"context window")
ERROR_SCAN_BYTES = 64 * 1024
# Bub events that name the model of the calls that follow (run: the call just made).
MODEL_EVENTS = ("run", "loop.start", "model_switch")
STEP_KINDS = ("message", "tool_call")  # the kinds an agent step of Bub's next format takes


class PhaseTally:
    """The phase being indexed and the phase anchors new in this batch, for one indexing run."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self.current: AnchorRow | None = None
        self.stored = False  # the current phase's row is already in the database
        self.touched = False  # ... and has counted entries since it was last written
        self.ended: list[AnchorRow] = []  # stored phases that ended in this batch, to be written
        # nanobot's metadata usage (its last turn's), waiting for a turn after the last anchor.
        self.snapshot: int | None = None
        if tape.phase_anchor_pos is not None:
            found = Anchor.objects.filter(tape=tape, pos=tape.phase_anchor_pos).values(*AnchorRow.__slots__)
            self.current = next((AnchorRow(**values) for values in found[:1]), None)
            self.stored = self.current is not None
        elif tape.lead_phase:
            self.current = _filled(
                AnchorRow(tape.lead_phase.get("start_pos") or 1, phase_index=0), tape.lead_phase
            )

    def add(self, e: Entry, anchor: AnchorRow | None) -> None:
        """Count one entry (or unreadable line); `anchor` is the row made for it, if it is an anchor."""
        tape = self.tape
        if anchor is not None and anchor.phase:
            self.opened(anchor)
        elif self.current is None:
            self.current = AnchorRow(e.pos, phase_index=0)  # the span before any anchor
        phase = self.current
        phase.end_pos = e.pos
        self.touched = True
        if not e.readable:
            return
        counted = phase is not anchor or not e.anchor_only
        if counted:
            phase.entries += 1
        kind = e.kind
        # nanobot's metadata record is stamped when the file is saved (`updated_at`), not when
        # anything in the phase it heads happened: it gives the phase no time (formats/nanobot.md §2.2).
        date = e.date if kind != "metadata" else None
        if date is not None:
            dated(phase, date)
        phase.errors += e.is_error
        used = usage(e) if e.prompt_tokens is not None or e.tokens else None
        if used is not None:
            prompt, completion, cached = used
            phase.prompt_tokens = (phase.prompt_tokens or 0) + prompt
            phase.completion_tokens = (phase.completion_tokens or 0) + completion
            phase.cached_tokens = (phase.cached_tokens or 0) + cached
        if kind == "tool_call":
            phase.tool_calls += len(reader(tape.kind).tool_calls(e))
        elif kind == "message" and e.name and counted:
            phase.roles[e.name[:40]] = phase.roles.get(e.name[:40], 0) + 1
        elif kind == "event" and e.name in MODEL_EVENTS:
            model = model_of(e)
            if model:
                phase.model = tape.model = model[:200]
        if kind in STEP_KINDS and e.meta.get("format") == NEXT_FORMAT:
            model = e.meta.get("model_name")  # the agent step's own (formats/bub-next.md §4)
            if model:
                phase.model = tape.model = model[:200]
        if kind == "anchor" or anchor is not None or e.prompt_tokens is not None or e.is_error:
            self._context(e, anchor)
        elif self.snapshot is not None and tape.context_tokens is None and _replies(e):
            # A turn after the last anchor: nanobot's last-turn usage is of this context.
            tape.context_tokens = self.snapshot

    def _context(self, e: Entry, anchor: AnchorRow | None) -> None:
        """Prompt tokens reported since the last anchor of any name (each anchor cuts the context)."""
        tape = self.tape
        if anchor is not None:
            self.cut(e.name)
        elif e.kind == "metadata":
            # nanobot's last turn's usage, written ahead of the messages: of the context since the
            # last anchor only if a turn follows that anchor (compaction saves before the next turn).
            tape.context_tokens = self.snapshot = e.prompt_tokens
        elif e.prompt_tokens is not None:
            tape.context_tokens = e.prompt_tokens
        if e.is_error and not tape.overflowed:
            tape.overflowed = says_overflow(e.payload)

    def opened(self, anchor: AnchorRow) -> None:
        """A phase anchor: the phase before it ends, and its own begins."""
        self._close()
        self.tape.phase_count += 1
        anchor.phase_index = self.tape.phase_count
        self.current, self.stored = anchor, False

    def cut(self, name: str) -> None:
        """An anchor of any name: the model's context starts again after it."""
        self.tape.context_tokens = None
        self.tape.overflowed = self.tape.overflowed or name == OVERFLOW_ANCHOR

    def anchored(self, pos: int, name: str) -> None:
        """The tape's figures of its anchors of any name: how many, the last, the entries since."""
        tape = self.tape
        tape.anchors += 1
        tape.last_anchor, tape.last_anchor_pos, tape.entries_since_anchor = name[:300], pos, 0

    def _close(self) -> None:
        phase = self.current
        if phase is not None and phase.phase_index == 0:
            self.tape.lead_phase = lead_to_dict(phase)
        elif phase is not None and self.stored and self.touched:
            self.ended.append(phase)
        self.touched = False

    def settle(self) -> None:
        """Before the tape's row is saved: the span before the first anchor goes with it."""
        if self.current is not None and self.current.phase_index == 0:
            self.tape.lead_phase = lead_to_dict(self.current)

    def write(self, fresh: list[AnchorRow]) -> None:
        """After the batch's new anchors are inserted (`fresh`): the stored phases it went on with."""
        phase = self.current
        if phase is not None and self.stored and self.touched and phase.phase_index:
            self.ended.append(phase)
        bulk.update_phases(self.tape.pk, self.ended, STATS)
        self.ended = []
        if phase is not None and any(a is phase for a in fresh):
            self.stored = True
        self.touched = False


def anchor_only(e: Entry) -> bool:
    """`Entry.anchor_only` (the reader's rule), for the indexer, which takes it from here."""
    return e.anchor_only


def anchor_state(e: Entry) -> Any:
    """An anchor's state: an anchor line's own, or the one a family's reader gives a row that is
    also an anchor (the summary nanobot keeps of its latest checkpoint); None where it has none."""
    if e.is_anchor:
        return e.payload.get("state") if isinstance(e.payload, dict) else None
    return e.meta.get("state") if e.anchor else None


def dated(phase: AnchorRow, date: datetime) -> None:
    """A phase's first and last dates with one more; Bub's dates are not monotonic in file order
    (formats/bub.md §0)."""
    if phase.started_at is None:
        phase.started_at = phase.ended_at = date
    elif date > phase.ended_at:
        phase.ended_at = date
    elif date < phase.started_at:
        phase.started_at = date


def _replies(e: Entry) -> bool:
    """An assistant row of nanobot's (a reply, or its tool calls): a turn happened here."""
    return e.kind == "tool_call" or (e.kind == "message" and e.name == "assistant")


def usage(e: Entry) -> tuple[int, int, int] | None:
    """(prompt, completion, cached) tokens one model call reported, or None where it reported none.

    nanobot's metadata record holds only its last turn's usage, a snapshot and not a call: it
    counts for the context (PhaseTally._context), never in a phase's sums.
    """
    if e.kind == "metadata" or (e.prompt_tokens is None and not e.tokens):
        return None
    prompt = e.prompt_tokens or 0
    return prompt, max(0, e.tokens - prompt), e.cached_tokens or 0


def model_of(e: Entry) -> str:
    """The model a Bub event names (`run`, `loop.start`, `model_switch`); "" for anything else."""
    if e.kind != "event" or e.name not in MODEL_EVENTS or not isinstance(e.payload, dict):
        return ""
    data = e.payload.get("data")
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else ""


def says_overflow(payload: Any) -> bool:
    try:
        text = orjson.dumps(payload)[:ERROR_SCAN_BYTES].lower()
    except (TypeError, orjson.JSONEncodeError):
        return False
    return any(word in text for word in OVERFLOW_WORDS)


def lead_to_dict(phase: Anchor | AnchorRow) -> dict:
    """The span before the first anchor as the Tape keeps it: its dates in UTC, as the database keeps
    an anchor's (the compiled lane's dates are UTC, the Python lane's keep the line's offset)."""
    data: dict[str, Any] = {"start_pos": phase.pos}
    for name in STATS:
        value = getattr(phase, name)
        data[name] = value.astimezone(UTC).isoformat() if isinstance(value, datetime) else value
    return data


def lead_from_dict(tape: Tape, data: dict) -> Anchor:
    """The span before the first anchor as an (unsaved) Anchor, from its dict on the Tape."""
    return _filled(Anchor(tape=tape, pos=data.get("start_pos") or 1, phase_index=0), data)


def _filled(phase: Any, data: dict) -> Any:
    for name in STATS:
        if name in data and data[name] is not None:
            value = data[name]
            setattr(phase, name, datetime.fromisoformat(value).astimezone(UTC) if name in DATES else value)
    return phase
