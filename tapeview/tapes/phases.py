"""A tape's phases as the index keeps them (tapes.phase_tally): listed in order, or ranked by a column.

Phase 0 is the span before the first phase anchor (when there is one), the others start at their
anchors. Reading them costs one row per phase, never a read of the tape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, DurationField, ExpressionWrapper, F, Value
from django.db.models.functions import Coalesce

from tapeview.sources.bub_lines import NON_PHASE_PREFIXES

from .models import Anchor, Tape
from .phase_tally import lead_from_dict

# Why anchors under these names start no phase (NON_PHASE_PREFIXES): said where the table leaves them out.
NOT_PHASES = {
    "memory/": (
        "each marks a version of the memory zone, written with every memory change, not a phase of the work"
    ),
    "spill/": "each holds a piece of an entry spilled aside, not a phase of the work",
}
NAMES_SHOWN = 3  # the names of a group of left-out anchors shown; past them, the group's prefix

# The phase table's sorts: the query's ordering, and the same as a key of a Phase (for phase 0).
SORTS = ("index", "entries", "tokens", "duration", "calls", "errors")


@dataclass
class Phase:
    index: int
    anchor: Anchor | None  # None: the span before the first anchor
    start_pos: int
    end_pos: int
    entries: int
    started_at: datetime | None
    ended_at: datetime | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    tool_calls: int
    errors: int
    model: str
    roles: dict[str, int] = field(default_factory=dict)

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()

    @property
    def tokens(self) -> int | None:
        """Prompt and completion tokens together; None where the phase reported no usage."""
        if self.prompt_tokens is None:
            return None
        return self.prompt_tokens + (self.completion_tokens or 0)

    def key(self, sort: str) -> tuple:
        """The sort key of this phase for `sort`, nulls last either way (as the query's)."""
        value = {
            "index": self.index,
            "entries": self.entries,
            "tokens": self.tokens,
            "duration": self.duration_s,
            "calls": self.tool_calls,
            "errors": self.errors,
        }[sort]
        return (value is None, value or 0)


def of(anchor: Anchor) -> Phase:
    is_lead = anchor.phase_index == 0
    return Phase(
        index=anchor.phase_index or 0,
        anchor=None if is_lead else anchor,
        start_pos=anchor.pos,
        end_pos=anchor.end_pos or anchor.pos,
        entries=anchor.entries,
        started_at=anchor.started_at,
        ended_at=anchor.ended_at,
        prompt_tokens=anchor.prompt_tokens,
        completion_tokens=anchor.completion_tokens,
        cached_tokens=anchor.cached_tokens,
        tool_calls=anchor.tool_calls,
        errors=anchor.errors,
        model=anchor.model,
        roles=anchor.roles if isinstance(anchor.roles, dict) else {},
    )


def lead(tape: Tape) -> Phase | None:
    """The span before the first phase anchor, or None when the tape starts with one."""
    return of(lead_from_dict(tape, tape.lead_phase)) if tape.lead_phase else None


def in_order(tape: Tape, after: int | None = None, limit: int = 50) -> tuple[list[Phase], bool]:
    """Up to `limit` phases with index > after, in file order; whether more follow."""
    found: list[Phase] = []
    first = lead(tape)
    if first is not None and after is None:
        found.append(first)
    anchors = Anchor.objects.filter(tape=tape, phase=True, phase_index__gt=after or 0)
    found += [of(a) for a in anchors.order_by("phase_index")[: limit + 1 - len(found)]]
    return found[:limit], len(found) > limit


def ranked(tape: Tape, sort: str, limit: int = 100) -> list[Phase]:
    """The first `limit` phases by a column of SORTS; `-` before it sorts descending, nulls last."""
    name, descending = sort.lstrip("-"), sort.startswith("-")
    expression = {
        "index": F("phase_index"),
        "entries": F("entries"),
        "tokens": F("prompt_tokens") + Coalesce(F("completion_tokens"), Value(0)),
        "duration": ExpressionWrapper(F("ended_at") - F("started_at"), output_field=DurationField()),
        "calls": F("tool_calls"),
        "errors": F("errors"),
    }[name]
    order = expression.desc(nulls_last=True) if descending else expression.asc(nulls_last=True)
    anchors = Anchor.objects.filter(tape=tape, phase=True).order_by(order, "phase_index")[:limit]
    found = [of(a) for a in anchors]
    first = lead(tape)
    if first is not None:
        found.append(first)
    # Nulls last either way; ties in file order.
    found.sort(key=lambda p: p.index)
    found.sort(key=lambda p: p.key(name), reverse=descending)
    if descending:
        found.sort(key=lambda p: p.key(name)[0])
    return found[:limit]


def count(tape: Tape) -> int:
    return max(tape.phase_count, 0) + (1 if tape.lead_phase else 0)


@dataclass(frozen=True)
class LeftOut:
    """Anchors the phase table leaves out, by what their names start with: how many, and why."""

    prefix: str
    count: int
    names: tuple[tuple[str, int], ...]  # each name and its count; empty past NAMES_SHOWN names
    why: str


def left_out(tape: Tape) -> list[LeftOut]:
    """The tape's anchors that are no phase boundary (a memory zone's, a spill's), grouped."""
    anchors = Anchor.objects.filter(tape=tape, phase=False)
    found = []
    for prefix in NON_PHASE_PREFIXES:
        group = anchors.filter(name__startswith=prefix)
        names = list(group.values_list("name").annotate(n=Count("pk")).order_by("name")[: NAMES_SHOWN + 1])
        if not names:
            continue
        few = len(names) <= NAMES_SHOWN  # else a spill's names, one per piece: counted, not listed
        total = sum(n for _, n in names) if few else group.count()
        found.append(LeftOut(prefix, total, tuple(names) if few else (), NOT_PHASES.get(prefix, "")))
    return found
