"""A store as it stood at a point of the past (a time, a tape's anchor or entry): what the agent knew then."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from tapeview.tapes import context, lookup
from tapeview.tapes.models import Tape

from .history import Step
from .kinds import kind_of
from .models import MemoryStore
from .stores.model import Snapshot


@dataclass(frozen=True)
class Point:
    """A point of the past: a time, or an entry of a tape (with the time the index has for it)."""

    when: datetime | None
    tape: Tape | None = None
    pos: int | None = None
    label: str = ""  # how the page names it

    @classmethod
    def at(cls, when: datetime) -> Point:
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        return cls(when, label=when.isoformat())


def entry_point(tape_key: str, anchor: str | None = None, pos: int | None = None) -> Point:
    """The anchor (a position, or a name: its last occurrence) or entry of a tape (LookupError if none)."""
    tape = lookup.find_tape(tape_key)
    if anchor:
        found = context.find_anchor(tape, anchor)
        assert found is not None  # a ref always names one, or raises
        return Point(found.date, tape, found.pos, f"anchor {found.name} (#{found.pos}) of {tape.label}")
    row = lookup.find_row(tape, pos or 0)
    return Point(row.date, tape, row.pos, f"entry #{row.pos} of {tape.label}")


def version_at(store: MemoryStore, point: Point) -> Step:
    """The version that held at `point`: LookupError before the first (or at an entry with no time)."""
    steps = kind_of(store).history(store)
    if point.tape is not None and point.pos is not None:
        # A zone kept in this very tape: its place in the file says exactly which version held.
        mine = [i for i, s in enumerate(steps) if s.place and s.place[0] == point.tape.key]
        if mine:
            before = [i for i in mine if steps[i].place[1] <= point.pos]  # type: ignore[index]
            i = before[-1] if before else mine[0] - 1
            if i < 0:
                raise LookupError(f"no version of this store as of {point.label}")
            return steps[i]
        if point.when is None:
            raise LookupError(f"{point.label} has no time (the tape records none): pick a time instead")
    assert point.when is not None
    dated = [(s.date, i) for i, s in enumerate(steps) if s.date is not None and s.date <= point.when]
    if not dated:
        raise LookupError(f"no version of this store as of {point.label or point.when.isoformat()}")
    return steps[max(dated)[1]]


def snapshot_of(step: Step) -> Snapshot:
    """A past version as a store snapshot, for the page and the API's detail."""
    return Snapshot(step.version, step.text, step.items)
