"""Each turn's first and last known times, counted while a tape is indexed from its rows alone.

The indexer keeps no entry's payload, and the compiled lane makes no Python object per line, so a
turn is told here by the kinds, names and dates the packed rows hold (a batch at a time, in numpy),
as near as those tell the turns `tapes.turns` reads from the entries:

- Bub (both formats): a turn opens at the loop's start or a comma command; in 0.5.1 also at a user's
  message that no loop start announced (0.2's steps). Its end is its last entry other than the
  bookkeeping between turns (anchors, handoffs, commands, model switches, a step's start, the
  system prompt), so an operator's handoff an hour later lengthens no turn.
- nanobot and araliya: a turn opens at a user's message, or at whatever follows an answer (a
  message the agent sent of its own); nanobot's metadata record is stamped when the file is saved,
  and gives no turn a time. A summary checkpoint nanobot writes in the user's place is a user's row
  to the index (its `aside` is in the file only): it opens a turn here, where the turns page goes on.
- yachiyo: a turn is a run (its anchor row) and its events; the session's messages repeat the runs.

A turn's start is the earliest time of its opener and its entries, its end the latest of its
entries; a turn with no dated entry has no end, and counts in no duration ("where known").
"""

from __future__ import annotations

import numpy as np

from tapeview.sources.bub_next_lines import FORMAT as NEXT_FORMAT

from . import bulk
from .models import Tape, Turn
from .packing import ANCHOR, NO_DATE, READABLE, Chunk

# Kinds of opener a Bub row is (`Turn.carry` keeps the last one between batches).
NONE, LOOP, COMMAND, USER = 0, 1, 2, 3
# Bub rows that are bookkeeping between turns (or a step's preamble): they end no turn.
BUB_BETWEEN = ["handoff", "model_switch", "command", "loop.step.start"]
NEVER = np.iinfo(np.int64).max  # no start yet: above every date


class _Open:
    """The tape's last turn as this run counts it; dates in microseconds (packing.micros), NO_DATE
    for none."""

    __slots__ = ("number", "first_pos", "start", "end", "carry", "touched")

    def __init__(self, number: int, first_pos: int, start: int, end: int, carry: int) -> None:
        self.number, self.first_pos, self.start, self.end = number, first_pos, start, end
        self.carry, self.touched = carry, False

    def row(self) -> tuple[int, int, int | None, int | None, int]:
        return self.number, self.first_pos, _known(self.start), _known(self.end), self.carry


class TurnTally:
    """The turns of one indexing run: the tape's last turn, which the next rows may go on with
    (stored: its row is in the database), and the turns a batch opened (written with it)."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self.current: _Open | None = None
        self.stored = False
        self.went_on: _Open | None = None  # a stored turn the batch went on with, then closed
        self.new: list[tuple[int, int, int | None, int | None, int]] = []
        if tape.pk is not None and tape.next_pos > 1:
            found = Turn.objects.filter(tape=tape).order_by("-number").values_list(*bulk.TURN_FIELDS).first()
            if found is not None:
                number, first_pos, started, ended, carry = found
                self.current = _Open(number, first_pos, _stamp(started), _stamp(ended), carry)
                self.stored = True

    def add(self, chunk: Chunk) -> None:
        """A batch's rows, in file order (one batch between writes)."""
        if not chunk.count:
            return
        c = chunk.columns
        kind, name = _Words(chunk.kinds, c["kind"], KINDS), _Words(chunk.names, c["name"], NAMES)
        readable = (c["flags"] & READABLE) != 0
        carry = self.current.carry if self.current is not None else NONE
        if self.tape.kind == "bub":
            opens, timed, carry = _bub(kind, name, readable, c["flags"], carry, self.tape.line_format)
        elif self.tape.kind == "yachiyo":
            opens, timed = readable & kind.is_("anchor"), readable & ~kind.is_("message")
        else:
            opens, timed, carry = _chat(kind, name, readable, carry)
        self._count(c["pos"], c["date"], opens, timed & (c["date"] != NO_DATE))
        if self.current is not None and self.current.carry != carry:
            self.current.carry, self.current.touched = carry, True

    def _count(self, pos: np.ndarray, date: np.ndarray, opens: np.ndarray, dated: np.ndarray) -> None:
        """Each segment's earliest and latest date (segment 0: the turn open before the batch; n: the
        n-th turn it opens), in numpy: the rows of a real tape open a turn every dozen entries."""
        at = np.flatnonzero(opens)
        lows = np.full(len(at) + 1, NEVER, dtype=np.int64)
        highs = np.full(len(at) + 1, NO_DATE, dtype=np.int64)
        rows = np.flatnonzero(dated)
        if len(rows):
            segment, when = np.cumsum(opens)[rows], date[rows]
            starts = np.concatenate([[0], np.flatnonzero(np.diff(segment)) + 1])
            lows[segment[starts]] = np.minimum.reduceat(when, starts)
            highs[segment[starts]] = np.maximum.reduceat(when, starts)
        current = self.current
        if current is not None and highs[0] != NO_DATE:
            current.start = int(lows[0]) if current.start == NO_DATE else min(current.start, int(lows[0]))
            current.end = int(highs[0]) if current.end == NO_DATE else max(current.end, int(highs[0]))
            current.touched = True
        if not len(at):
            return
        # A turn starts at its opener's date too (a comma command's, which ends no turn).
        opened = date[at]
        start = np.where(opened != NO_DATE, np.minimum(opened, lows[1:]), lows[1:])
        start[start == NEVER] = NO_DATE
        first = current.number + 1 if current is not None else 1
        numbers = np.arange(first, first + len(at))
        if current is not None and self.stored and current.touched:
            self.went_on = current
        self.current = _Open(int(numbers[-1]), int(pos[at[-1]]), int(start[-1]), int(highs[-1]), NONE)
        self.current.touched, self.stored = True, False
        self.new = list(
            zip(
                numbers[:-1].tolist(),
                pos[at[:-1]].tolist(),
                _nullable(start[:-1]),
                _nullable(highs[1:-1]),
                [NONE] * (len(at) - 1),
                strict=True,
            )
        )

    def write(self) -> None:
        """In the batch's transaction, after its entries: the turns it went on with and opened."""
        current, updates = self.current, []
        if self.went_on is not None:
            updates.append(self.went_on.row())
        if current is not None and current.touched:
            if self.stored:
                updates.append(current.row())
            else:
                self.new.append(current.row())
        bulk.update_turns(self.tape.pk, updates)
        bulk.insert_turns(self.tape.pk, self.new)
        if current is not None:
            current.touched, self.stored = False, True
        self.went_on, self.new = None, []


def _nullable(values: np.ndarray) -> list[int | None]:
    listed = values.tolist()
    return [None if v == NO_DATE else v for v in listed] if (values == NO_DATE).any() else listed


def _known(value: int) -> int | None:
    return None if value == NO_DATE else value


def _stamp(value: int | None) -> int:
    return NO_DATE if value is None else value


class _Words:
    """A column of codes into a chunk's words, tested by code: each word the tally asks about gets a
    small number, the column one lookup (a word's own test is then a comparison of small integers)."""

    def __init__(self, words: list[str], codes: np.ndarray, asked: tuple[str, ...]) -> None:
        table = np.fromiter((asked.index(w) + 1 if w in asked else 0 for w in words), np.uint8, len(words))
        self.asked, self.column = asked, table[codes] if len(table) else np.zeros(len(codes), np.uint8)

    def is_(self, word: str) -> np.ndarray:
        return self.column == self.asked.index(word) + 1

    def among(self, wanted: list[str]) -> np.ndarray:
        return np.isin(self.column, [self.asked.index(w) + 1 for w in wanted])


KINDS = ("event", "message", "anchor", "system", "metadata")
NAMES = ("loop.start", "command", "user", "assistant", *BUB_BETWEEN)


def _bub(
    kind: _Words, name: _Words, readable: np.ndarray, flags: np.ndarray, carry: int, line_format: str
) -> tuple[np.ndarray, np.ndarray, int]:
    event = readable & kind.is_("event")
    loop, command = event & name.is_("loop.start"), event & name.is_("command")
    timed = readable & ((flags & ANCHOR) == 0) & ~kind.is_("anchor") & ~kind.is_("system")
    timed &= ~(event & name.among(BUB_BETWEEN))
    opens = loop | command
    # In 0.5.1 a user's message opens a turn unless the loop's start just did (0.2 wrote no loop
    # start: each step's message opens one). The next format writes it after the tools ran.
    user = readable & kind.is_("message") & name.is_("user")
    if line_format == NEXT_FORMAT:
        user[:] = False
    rows = np.flatnonzero(opens | user)
    if len(rows):
        which = np.where(loop[rows], LOOP, np.where(command[rows], COMMAND, USER))
        before = np.concatenate([[carry], which[:-1]])
        opens[rows[(which == USER) & (before != LOOP)]] = True
        carry = int(which[-1])
    return opens, timed, carry


def _chat(kind: _Words, name: _Words, readable: np.ndarray, carry: int) -> tuple[np.ndarray, np.ndarray, int]:
    """nanobot's and araliya's turns: a user's message opens one, and so does whatever follows an
    answer (`carry` 1: the batch before ended in one)."""
    timed = readable & ~kind.is_("metadata")
    message = timed & kind.is_("message")
    answer, user = message & name.is_("assistant"), message & name.is_("user")
    rows = np.flatnonzero(timed)
    after = np.zeros(len(readable), dtype=bool)
    if len(rows):
        after[rows] = np.concatenate([[carry == 1], answer[rows][:-1]])
        carry = int(answer[rows][-1])
    return user | (timed & after), timed, carry
