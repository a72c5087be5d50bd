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
    tape_key = point.tape.key if point.tape is not None else None
    return kind_of(store).step_at(store, tape_key, point.pos, point.when, point.label)


def snapshot_of(step: Step) -> Snapshot:
    """A past version as a store snapshot, for the page and the API's detail."""
    return Snapshot(step.version, step.text, step.items)
