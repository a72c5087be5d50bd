"""Where a tape's entries sit in its file and what they are: the one way to ask the offset index.

A `Rows` selection is a tape (or a few), a position range and filters; one terminal question
(`first`, `head`, `tail`, `count`, ...) answers it with `Row`s, plain values that say where to read.
The entries are stored packed, thousands to a chunk (tapes.packing): a question reads the chunks'
tallies first, and opens only the chunks that can hold an answer, in the order it needs them.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from operator import attrgetter

import numpy as np
import orjson
from django.db.models import QuerySet

from .chunk_rows import Match, Row, rows_of, split_key
from .models import Anchor, EntryChunk, Tape
from .packing import Chunk, decode

SUMMARIES = 16  # chunk summaries fetched at a time while walking a tape
SUMMARY = ("id", "first_pos", "last_pos", "tally")
_FIRST, _LAST = attrgetter("first_pos"), attrgetter("last_pos")


@dataclass(frozen=True)
class Summary:
    """A chunk as its row says without opening it."""

    id: int
    first_pos: int
    last_pos: int
    tally: dict[str, int]
    opened: Chunk | None = None  # its arrays, when they came with the summary


class Rows:
    """A selection of rows: immutable, each narrowing returns a new one; nothing is read until asked."""

    def __init__(
        self,
        tapes: Tape | Iterable[Tape],
        *,
        low: int | None = None,
        high: int | None = None,
        where: tuple[tuple[Match, ...], ...] = (),
    ) -> None:
        self.tapes = [tapes] if isinstance(tapes, Tape) else list(tapes)
        self.low, self.high = low, high  # inclusive bounds of pos
        self.conditions = where  # every group must hold; a group holds when any of its matches does

    def _narrowed(self, **changes) -> Rows:
        fields = {"low": self.low, "high": self.high, "where": self.conditions, **changes}
        return Rows(self.tapes, **fields)

    def after(self, pos: int | None) -> Rows:
        """Rows past `pos` (None: no bound)."""
        return self if pos is None else self.starting(pos + 1)

    def before(self, pos: int | None) -> Rows:
        return self if pos is None else self.through(pos - 1)

    def starting(self, pos: int | None) -> Rows:
        """Rows at `pos` or later."""
        if pos is None:
            return self
        return self._narrowed(low=pos if self.low is None else max(self.low, pos))

    def through(self, pos: int | None) -> Rows:
        """Rows at `pos` or earlier."""
        if pos is None:
            return self
        return self._narrowed(high=pos if self.high is None else min(self.high, pos))

    def where(self, match: Match | None = None, /, **fields) -> Rows:
        """Only rows that are this Match (or these Match fields)."""
        return self.any_of(match or Match(**fields))

    def any_of(self, *matches: Match) -> Rows:
        """Only rows that are at least one of these."""
        return self._narrowed(where=(*self.conditions, tuple(matches)))

    # The questions.

    def head(self, limit: int) -> list[Row]:
        """The first `limit` rows, in file order."""
        found: list[Row] = []
        for chunk, picked in self._walk(descending=False):
            found += rows_of(chunk, picked[: limit - len(found)])
            if len(found) >= limit:
                break
        return found

    def tail(self, limit: int) -> list[Row]:
        """The last `limit` rows, in file order."""
        found: list[Row] = []
        for chunk, picked in self._walk(descending=True):
            found = rows_of(chunk, picked[max(0, len(picked) - (limit - len(found))) :]) + found
            if len(found) >= limit:
                break
        return found

    def all(self) -> list[Row]:
        """Every row, in file order: for selections known to be small."""
        return [row for chunk, picked in self._walk(descending=False) for row in rows_of(chunk, picked)]

    def first(self) -> Row | None:
        return next(iter(self.head(1)), None)

    def last(self) -> Row | None:
        return next(iter(self.tail(1)), None)

    def first_pos(self) -> int | None:
        return row.pos if (row := self.first()) else None

    def last_pos(self) -> int | None:
        return row.pos if (row := self.last()) else None

    def count(self) -> int:
        """How many, from the chunks' tallies where they answer it, opening only the others."""
        total = 0
        for tape in self.tapes:
            for summary in self._summaries(tape, descending=False, opened=False):
                inside = (self.low is None or summary.first_pos >= self.low) and (
                    self.high is None or summary.last_pos <= self.high
                )
                if inside and all(m.by_words() for group in self.conditions for m in group):
                    total += sum(n for key, n in summary.tally.items() if self._allows(key))
                elif self._may_hold(summary):
                    chunk = _open(tape, summary)
                    total += len(self._pick(chunk)) if chunk is not None else 0
        return total

    def exists(self) -> bool:
        return next(iter(self._walk(descending=False)), None) is not None

    def at(self, positions: Sequence[int]) -> list[Row]:
        """The rows at these positions (those that exist and match), in file order."""
        if not positions:
            return []
        wanted = np.array(sorted(set(positions)), dtype=np.int64)
        narrowed = self.starting(int(wanted[0])).through(int(wanted[-1]))
        found = []
        for chunk, picked in narrowed._walk(descending=False):
            hits = picked[np.isin(chunk.columns["pos"][picked], wanted)]
            found += rows_of(chunk, hits)
        return found

    def chunks(self) -> Iterator[tuple[Chunk, np.ndarray]]:
        """The opened chunks that hold rows of the selection, each with the indices of those rows:
        for arithmetic over many rows (the pictures) without a Row per entry. One query per tape."""
        for tape in self.tapes:
            for pk, first, last, tally, columns, vocab in (
                self._overlapping(tape).order_by("first_pos").values_list(*SUMMARY, "columns", "vocab")
            ):
                summary = Summary(pk, first, last, orjson.loads(tally))
                if self._may_hold(summary):
                    chunk = decode(bytes(columns), vocab)
                    picked = self._pick(chunk)
                    if len(picked):
                        yield chunk, picked

    # How they are answered.

    def _walk(self, *, descending: bool) -> Iterator[tuple[Chunk, np.ndarray]]:
        """The chunks that hold an answer, in the order asked, each with the indices of its answers."""
        for tape in reversed(self.tapes) if descending else self.tapes:
            for summary in self._summaries(tape, descending=descending):
                if not self._may_hold(summary):
                    continue
                chunk = self._open(tape, summary)
                picked = self._pick(chunk) if chunk is not None else ()
                if len(picked):
                    yield chunk, picked

    def _open(self, tape: Tape, summary: Summary) -> Chunk | None:
        return _open(tape, summary)

    def _summaries(self, tape: Tape, *, descending: bool, opened: bool = True) -> Iterator[Summary]:
        """The tape's chunks overlapping the range, nearest first: the nearest with its arrays when
        `opened` (most walks end there), then the others' summaries a few at a time."""
        chunks = self._overlapping(tape)
        order = "-first_pos" if descending else "first_pos"
        fields = (*SUMMARY, "columns", "vocab") if opened else SUMMARY
        nearest = chunks.order_by(order).values_list(*fields).first()
        if nearest is None:
            return
        pk, first, last, tally, *arrays = nearest
        yield Summary(
            pk, first, last, orjson.loads(tally), decode(bytes(arrays[0]), arrays[1]) if arrays else None
        )
        edge = first
        while True:
            page = chunks.filter(first_pos__lt=edge) if descending else chunks.filter(first_pos__gt=edge)
            found = list(page.order_by(order).values_list(*SUMMARY)[:SUMMARIES])
            for pk, first, last, tally in found:
                yield Summary(pk, first, last, orjson.loads(tally))
            if len(found) < SUMMARIES:
                return
            edge = found[-1][1]

    def _overlapping(self, tape: Tape) -> QuerySet[EntryChunk]:
        chunks = EntryChunk.objects.filter(tape=tape)
        if self.low is not None:
            chunks = chunks.filter(last_pos__gte=self.low)
        if self.high is not None:
            chunks = chunks.filter(first_pos__lte=self.high)
        return chunks

    def _may_hold(self, summary: Summary) -> bool:
        return any(self._allows(key) for key in summary.tally)

    def _allows(self, key: str) -> bool:
        kind, name, flag = split_key(key)
        return all(any(m.allows(kind, name, flag) for m in group) for group in self.conditions)

    def _pick(self, chunk: Chunk) -> np.ndarray:
        """The indices of a chunk's entries in the range and every condition, ascending."""
        pos = chunk.columns["pos"]
        keep = np.ones(len(pos), dtype=bool)
        if self.low is not None:
            keep &= pos >= self.low
        if self.high is not None:
            keep &= pos <= self.high
        for group in self.conditions:
            either = np.zeros(len(pos), dtype=bool)
            for match in group:
                either |= match.mask(chunk)
            keep &= either
        return np.flatnonzero(keep)


def of(tapes: Tape | Iterable[Tape]) -> Rows:
    """Every row of a tape (or of several)."""
    return Rows(tapes)


def anchored(names: Sequence[str]) -> QuerySet[Tape]:
    """The tapes, of the whole index, with an anchor of one of these names (the anchors are rows
    of their own, queried by value)."""
    return Tape.objects.filter(pk__in=Anchor.objects.filter(name__in=names).values("tape"))


def at(tape: Tape, pos: int) -> Row | None:
    return next(iter(of(tape).at([pos])), None)


def _open(tape: Tape, summary: Summary) -> Chunk | None:
    """A chunk's arrays. Found by where it starts, not its id: the indexer may have replaced it with
    a longer one since its summary was read (then its new entries come too); None when the tape
    was reset meanwhile."""
    if summary.opened is not None:
        return summary.opened
    chunk = EntryChunk.objects.filter(tape=tape, first_pos=summary.first_pos)
    found = chunk.values_list("columns", "vocab").first()
    return decode(bytes(found[0]), found[1]) if found else None


class Snapshot(Rows):
    """A tape's rows answered as Rows does, from its chunk summaries read once (one query) and each
    chunk opened at most once, however many questions one page asks of the same few chunks."""

    def __init__(self, tape: Tape, *, seen: tuple[list, dict] | None = None, **fields) -> None:
        super().__init__(tape, **fields)
        self.seen = seen or ([], {})  # the summaries (once read), the chunks opened by first_pos

    def _narrowed(self, **changes) -> Rows:
        fields = {"low": self.low, "high": self.high, "where": self.conditions, **changes}
        return Snapshot(self.tapes[0], seen=self.seen, **fields)

    def _open(self, tape: Tape, summary: Summary) -> Chunk | None:
        chunk = self.seen[1][summary.first_pos] = _open(tape, summary)
        return chunk

    def chunks(self) -> Iterator[tuple[Chunk, np.ndarray]]:
        """As Rows.chunks, from the chunks opened already when they are all it needs (no query)."""
        wanted = [s for s in self._summaries(self.tapes[0], descending=False) if self._may_hold(s)]
        if any(s.opened is None for s in wanted):
            return super().chunks()
        return ((s.opened, picked) for s in wanted if len(picked := self._pick(s.opened)))

    def _summaries(self, tape: Tape, *, descending: bool, opened: bool = True) -> Iterator[Summary]:
        summaries, chunks = self.seen
        if not summaries:
            found = EntryChunk.objects.filter(tape=tape).order_by("first_pos").values_list(*SUMMARY)
            summaries += [Summary(pk, first, last, orjson.loads(tally)) for pk, first, last, tally in found]
        # By bisection: the chunks are apart and in file order, so their first and last positions ascend.
        lo = 0 if self.low is None else bisect_left(summaries, self.low, key=_LAST)
        hi = len(summaries) if self.high is None else bisect_right(summaries, self.high, key=_FIRST)
        inside = summaries[lo:hi]
        inside = [replace(s, opened=chunks[s.first_pos]) if s.first_pos in chunks else s for s in inside]
        return reversed(inside) if descending else iter(inside)


def snapshot(tape: Tape) -> Rows:
    """Every row of a tape, for the many questions of one request (see Snapshot)."""
    return Snapshot(tape)
