"""Two sessions, or two phases, side by side: their figures, the tools they used, their errors, and
their anchors' states diffed.

The figures come from the index (the tape's row, its phases' rows); only the tool names and the
anchors' whole states are read from the files, and a bounded number of them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tapeview.sources import TapeNotFound, reader
from tapeview.sources.model import json_text

from . import lineage, phases
from . import rows as index_rows
from .models import Anchor, Tape
from .rows import Row
from .timeline import read_rows

TOOL_ENTRIES = 2_000  # tool call entries read for the tools' names; past them the counts say so
ERRORS_LISTED = 10  # errors named on each side
DIFFS = 200  # changed paths of the states listed; past them, how many more
DEPTH = 12  # how deep the states are walked; below it a value is compared whole
VALUE_TEXT = 300  # characters of a changed value shown


class NoSuchPhase(LookupError):
    """The tape has no phase anchor at this position."""


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a whole tape, or one of its phases."""

    tape: Tape
    phase: phases.Phase | None  # None: the whole tape
    low: int | None  # the positions it spans (None: from the start, to the end)
    high: int | None
    entries: int
    anchors: int
    errors: int
    tool_calls: int
    messages: dict[str, int]
    tokens: int | None
    cost: float | None  # the tape's reported cost; a phase has none of its own
    started_at: datetime | None
    ended_at: datetime | None
    tools: list[tuple[str, int]]  # each tool's name and calls, the most used first
    tools_complete: bool  # False: named from the first TOOL_ENTRIES tool call entries only
    error_rows: list[Row]
    state_anchor: Anchor | None  # the anchor whose state is compared (None: no anchor)
    state: Any = None

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()

    @property
    def title(self) -> str:
        if self.phase is None:
            return self.tape.label
        name = self.phase.anchor.name if self.phase.anchor is not None else "before the first anchor"
        return f"{self.tape.label} · phase {self.phase.index} ({name})"


@dataclass(frozen=True)
class Change:
    """One path where the two states differ: added (only in b), removed (only in a), or changed."""

    path: str
    op: str
    a: str | None  # the value as JSON text, bounded; None where that side has none
    b: str | None


@dataclass
class StateDiff:
    changes: list[Change] = field(default_factory=list)
    more: int = 0  # changes past DIFFS, not listed
    summary: list[dict] | None = None  # the summaries diffed word by word (lineage.word_diff)

    @property
    def same(self) -> bool:
        return not self.changes and not self.more and self.summary is None


@dataclass(frozen=True)
class Comparison:
    a: Side
    b: Side
    state_diff: StateDiff


def side(tape: Tape, phase_pos: int | None = None) -> Side:
    """The tape whole, or its phase whose anchor is at `phase_pos` (0: the span before the first anchor)."""
    if phase_pos is None:
        spans, low, high, phase = _every_phase(tape), None, None, None
        tokens, cost, start, end = tape.tokens, tape.cost, tape.first_at, tape.last_at
        state_anchor = Anchor.objects.filter(tape=tape, phase=True).order_by("-pos").first()
    else:
        phase = _phase(tape, phase_pos)
        spans, low, high = [phase], phase.start_pos, phase.end_pos
        tokens, cost, start, end = phase.tokens, None, phase.started_at, phase.ended_at
        state_anchor = phase.anchor
    messages: Counter[str] = Counter()
    for p in spans:
        messages.update(p.roles)
    selection = index_rows.of(tape).starting(low).through(high)
    tools, complete = _tools(tape, selection)
    return Side(
        tape=tape,
        phase=phase,
        low=low,
        high=high,
        entries=tape.entries if phase is None else phase.entries,
        anchors=tape.anchors if phase is None else selection.where(anchored=True).count(),
        errors=tape.errors if phase is None else phase.errors,
        tool_calls=sum(p.tool_calls for p in spans),
        messages=dict(sorted(messages.items(), key=lambda kv: (-kv[1], kv[0]))),
        tokens=tokens,
        cost=cost,
        started_at=start,
        ended_at=end,
        tools=tools,
        tools_complete=complete,
        error_rows=selection.where(errors=True).head(ERRORS_LISTED),
        state_anchor=state_anchor,
        state=lineage.states(tape, [state_anchor]).get(state_anchor.pos) if state_anchor else None,
    )


def _every_phase(tape: Tape) -> list[phases.Phase]:
    """The tape's phases as far as their counts go: one row per phase, never a read of the file."""
    lead = phases.lead(tape)
    fields = ("tool_calls", "roles")
    rows = Anchor.objects.filter(tape=tape, phase=True).values_list(*fields)
    found = [lead] if lead is not None else []
    for calls, roles in rows.iterator():
        roles = roles if isinstance(roles, dict) else {}
        found.append(phases.Phase(0, None, 0, 0, 0, None, None, None, None, None, calls, 0, "", roles))
    return found


def _phase(tape: Tape, pos: int) -> phases.Phase:
    if pos == 0:
        lead = phases.lead(tape)
        if lead is not None:
            return lead
    else:
        anchor = Anchor.objects.filter(tape=tape, phase=True, pos=pos).first()
        if anchor is not None:
            return phases.of(anchor)
    raise NoSuchPhase(f"no phase starts at {pos} on {tape.label}")


def _tools(tape: Tape, selection: index_rows.Rows) -> tuple[list[tuple[str, int]], bool]:
    calls = selection.where(kinds=("tool_call",)).head(TOOL_ENTRIES + 1)
    complete = len(calls) <= TOOL_ENTRIES
    try:
        entries = read_rows(tape, calls[:TOOL_ENTRIES])
    except TapeNotFound:
        entries = []
    source = reader(tape.kind)
    counts = Counter(
        str(call["name"])[:200]
        for e in entries
        if e.readable and not e.truncated
        for call in source.tool_calls(e)
    )
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])), complete


def compare(a: Tape, b: Tape, pa: int | None = None, pb: int | None = None) -> Comparison:
    """Tape `a` (or its phase at `pa`) beside tape `b` (or its phase at `pb`)."""
    left, right = side(a, pa), side(b, pb)
    return Comparison(left, right, diff_states(left.state, right.state))


def diff_states(a: Any, b: Any) -> StateDiff:
    """Every path where the two states differ (objects key by key, lists item by item), the
    summaries also word by word."""
    found = StateDiff()
    _walk(a, b, "$", 0, found)
    word = lineage.diff_states(a, b)["summary"] if isinstance(a, dict) or isinstance(b, dict) else None
    found.summary = word
    return found


_MISSING = object()


def _walk(a: Any, b: Any, path: str, depth: int, found: StateDiff) -> None:
    if a is _MISSING or b is _MISSING:
        _note(found, path, "added" if a is _MISSING else "removed", a, b)
        return
    if depth < DEPTH and isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            _walk(a.get(key, _MISSING), b.get(key, _MISSING), f"{path}.{key}", depth + 1, found)
        return
    if depth < DEPTH and isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            left = a[i] if i < len(a) else _MISSING
            right = b[i] if i < len(b) else _MISSING
            _walk(left, right, f"{path}[{i}]", depth + 1, found)
        return
    if type(a) is not type(b) or a != b:
        _note(found, path, "changed", a, b)


def _note(found: StateDiff, path: str, op: str, a: Any, b: Any) -> None:
    if len(found.changes) >= DIFFS:
        found.more += 1
        return
    found.changes.append(Change(path, op, _text(a), _text(b)))


def _text(value: Any) -> str | None:
    if value is _MISSING:
        return None
    text = json_text(value)
    return text if len(text) <= VALUE_TEXT else text[: VALUE_TEXT - 1] + "…"
