"""Whether a Bub agent is mid-turn, for the tape page's "Hand off…" action: one row read, kept until
the tape's index changes (formats/bub.md §4: a handoff is written only between turns)."""

from __future__ import annotations

from tapeview.sources.bub_tail import is_terminal

from . import pictures, timeline
from . import rows as index_rows
from .models import Tape
from .rows import Rows


def mid_turn(tape: Tape, index: Rows | None = None) -> bool:
    """The tape's last entry ends no turn: the agent is writing one, or stopped in one. As the
    budget's `mid_turn` (turn_end.last_turn_end), without looking back for where the turn began."""
    if tape.kind != "bub" or tape.role != "tape":
        return False  # no handoff is offered on these tapes (handoff.refusal)
    # Bytes past the last indexed line: the agent is writing one (a handoff now gets 409 busy).
    return tape.pending_bytes > 0 or pictures.cached("mid-turn", tape, lambda: _mid_turn(tape, index))


def _mid_turn(tape: Tape, index: Rows | None) -> bool:
    last = (index or index_rows.of(tape)).tail(1)
    if not last:
        return False
    entry = timeline.read_rows(tape, last)
    ends = bool(entry) and not entry[0].truncated and is_terminal(entry[0])  # as turn_end's rule
    return not ends
