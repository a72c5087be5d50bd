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
  and gives no turn a time.
- yachiyo: a turn is a run (its anchor row) and its events; the session's messages repeat the runs.

A turn's start is the earliest time of its opener and its entries, its end the latest of its
entries; a turn with no dated entry has no end, and counts in no duration ("where known").
"""

from __future__ import annotations

import numpy as np

from tapeview.sources.bub_next_lines import FORMAT as NEXT_FORMAT

from . import bulk
from .models import Tape, Turn
from .packing import ANCHOR, NO_DATE, READABLE, Chunk, from_micros, micros

# Kinds of opener a Bub row is (`Turn.carry` keeps the last one between batches).
NONE, LOOP, COMMAND, USER = 0, 1, 2, 3
# Bub rows that are bookkeeping between turns (or a step's preamble): they end no turn.
BUB_BETWEEN = ["handoff", "model_switch", "command", "loop.step.start"]


class _Open:
    """A turn as this run counts it; dates in microseconds (packing.micros), NO_DATE for none."""

    __slots__ = ("number", "first_pos", "start", "end", "carry", "stored", "touched")

    def __init__(self, number: int, first_pos: int, start: int, end: int, carry: int, stored: bool) -> None:
        self.number, self.first_pos, self.start, self.end = number, first_pos, start, end
        self.carry, self.stored, self.touched = carry, stored, False

    def row(self) -> tuple:
        return self.number, self.first_pos, from_micros(self.start), from_micros(self.end), self.carry


class TurnTally:
    """The turns of one indexing run: the tape's last turn (which the next rows may go on with),
    the stored turns that went on in this batch, and the turns it opened."""

    def __init__(self, tape: Tape) -> None:
        self.tape = tape
        self.current: _Open | None = None
        self.went_on: list[_Open] = []
        self.new: list[_Open] = []
        if tape.pk is not None and tape.next_pos > 1:
            found = Turn.objects.filter(tape=tape).order_by("-number").values_list(*bulk.TURN_FIELDS).first()
            if found is not None:
                number, first_pos, started, ended, carry = found
                self.current = _Open(number, first_pos, micros(started), micros(ended), carry, True)

    def add(self, chunk: Chunk) -> None:
        """A batch's rows, in file order."""
        if not chunk.count:
            return
        c = chunk.columns
        kind, name = _Words(chunk.kinds, c["kind"]), _Words(chunk.names, c["name"])
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
            self.current.touched = True

    def _count(self, pos: np.ndarray, date: np.ndarray, opens: np.ndarray, dated: np.ndarray) -> None:
        at = np.flatnonzero(opens)
        number = self.current.number if self.current is not None else 0
        opened = [
            _Open(number + i + 1, p, d, NO_DATE, NONE, False)
            for i, (p, d) in enumerate(zip(pos[at].tolist(), date[at].tolist(), strict=True))
        ]
        turns = [self.current, *opened]  # by segment: 0 is the turn open before this batch
        rows = np.flatnonzero(dated)
        if len(rows):
            segment, when = np.cumsum(opens)[rows], date[rows]
            starts = np.concatenate([[0], np.flatnonzero(np.diff(segment)) + 1])
            lows, highs = np.minimum.reduceat(when, starts), np.maximum.reduceat(when, starts)
            for s, low, high in zip(segment[starts].tolist(), lows.tolist(), highs.tolist(), strict=True):
                turn = turns[s]
                if turn is None:  # before the tape's first turn: in none
                    continue
                turn.start = low if turn.start == NO_DATE else min(turn.start, low)
                turn.end = high if turn.end == NO_DATE else max(turn.end, high)
                turn.touched = True
        if opened:
            current = self.current
            if current is not None and current.stored and current.touched:
                self.went_on.append(current)
            self.new.extend(opened)
            self.current = opened[-1]

    def write(self) -> None:
        """In the batch's transaction, after its entries: the turns it went on with and opened."""
        current = self.current
        if current is not None and current.stored and current.touched and current not in self.went_on:
            self.went_on.append(current)
        bulk.update_turns(self.tape.pk, [t.row() for t in self.went_on])
        bulk.insert_turns(self.tape.pk, [t.row() for t in self.new])
        for t in (*self.went_on, *self.new):
            t.stored, t.touched = True, False
        self.went_on, self.new = [], []


class _Words:
    """A column of codes into a chunk's words, compared by code: a word's test costs one lookup per
    row, not one string comparison."""

    def __init__(self, words: list[str], codes: np.ndarray) -> None:
        self.words, self.codes = words, codes

    def among(self, wanted: list[str] | tuple[str, ...]) -> np.ndarray:
        table = np.fromiter((w in wanted for w in self.words), dtype=bool, count=len(self.words))
        return table[self.codes] if len(table) else np.zeros(len(self.codes), dtype=bool)

    def is_(self, word: str) -> np.ndarray:
        return self.among((word,))


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
