"""Where a Bub tape's last turn ended: the tape's end between turns, else the last entry that ended a
turn before the one under way (formats/bub.md §4: a handoff is written only between turns)."""

from __future__ import annotations

from dataclasses import dataclass

from tapeview.sources.bub_tail import is_terminal

from . import rows as index_rows
from . import timeline
from .models import Tape
from .rows import Rows

# The newest events and anchors read back for the end of the last turn while one is under way. A turn
# that wrote more since has its start further back: then no end is offered, rather than reading on.
LOOK_BACK = 64


@dataclass(frozen=True)
class TurnEnd:
    pos: int | None  # the last entry after `start` that ends a turn; None: none found
    mid_turn: bool  # the tape's last entry ends no turn: the agent is writing one, or stopped in one


def last_turn_end(tape: Tape, start: int, index: Rows | None = None) -> TurnEnd:
    """The end of the last turn after the entry at `start`: one row read on a tape between turns."""
    rows = (index or index_rows.of(tape)).after(start)
    last = rows.tail(1)
    if not last:
        return TurnEnd(None, False)
    if _ends_turn(tape, last):
        return TurnEnd(last[0].pos, False)
    # Only an event or an anchor ends a turn (bub_tail.is_terminal): the others are not read.
    back = [r for r in rows.where(kinds=("event", "anchor")).tail(LOOK_BACK) if r.pos != last[0].pos]
    ends = [e.pos for e in timeline.read_rows(tape, back) if not e.truncated and is_terminal(e)]
    return TurnEnd(max(ends) if ends else None, True)


def _ends_turn(tape: Tape, rows: list) -> bool:
    entry = timeline.read_rows(tape, rows)
    return bool(entry) and not entry[0].truncated and is_terminal(entry[0])
