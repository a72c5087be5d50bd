"""Where a tape's entries sit in its file and what they are: the one way to ask the offset index.

A `Rows` selection is a tape (or a few), a position range and filters; one terminal question
(`first`, `head`, `tail`, `count`, ...) answers it with `Row`s, plain values that say where to read.
Today every entry is one database row (`EntryRow`); nothing outside this module and the indexer
knows that, so the store can take the shape that indexes at the rate of parsing (issue 10:
packed chunks of offsets) without its readers changing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from .models import EntryRow, Tape

FIELDS = ("pos", "offset", "length", "entry_id", "kind", "name", "date", "readable", "is_error", "context")


@dataclass(frozen=True, slots=True)
class Row:
    """One entry's place in its file (offset, length) and what the indexer saw of it."""

    pos: int
    offset: int
    length: int
    entry_id: int | None
    kind: str
    name: str
    date: datetime | None
    readable: bool
    is_error: bool
    context: bool


@dataclass(frozen=True)
class Match:
    """What a row must be; an empty Match matches every row. Fields left at their default ask nothing."""

    kinds: tuple[str, ...] = ()
    not_kinds: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    ids: tuple[int, ...] = ()  # the agent's entry ids
    name_prefix: str = ""
    name_contains: str = ""
    errors: bool | None = None
    readable: bool | None = None
    context: bool | None = None
    longer_than: int | None = None  # length in bytes
    at_most: int | None = None  # length in bytes
    has_id: bool | None = None
    min_id: int | None = None
    since: datetime | None = None  # dated at or after (undated rows never match)

    def q(self) -> Q:
        q = Q()
        for lookup, value in (
            ("kind__in", self.kinds),
            ("name__in", self.names),
            ("entry_id__in", self.ids),
            ("name__startswith", self.name_prefix),
            ("name__contains", self.name_contains),
            ("is_error", self.errors),
            ("readable", self.readable),
            ("context", self.context),
            ("length__gt", self.longer_than),
            ("length__lte", self.at_most),
            ("entry_id__gte", self.min_id),
            ("date__gte", self.since),
        ):
            if value not in ((), "", None):
                q &= Q(**{lookup: value})
        if self.not_kinds:
            q &= ~Q(kind__in=self.not_kinds)
        if self.has_id is not None:
            q &= Q(entry_id__isnull=not self.has_id)
        return q


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
        return _rows(self._query().order_by("pos")[:limit])

    def tail(self, limit: int) -> list[Row]:
        """The last `limit` rows, in file order."""
        return list(reversed(_rows(self._query().order_by("-pos")[:limit])))

    def all(self) -> list[Row]:
        """Every row, in file order: for selections known to be small."""
        return _rows(self._query().order_by("pos"))

    def first(self) -> Row | None:
        found = self.head(1)
        return found[0] if found else None

    def last(self) -> Row | None:
        found = self.tail(1)
        return found[0] if found else None

    def first_pos(self) -> int | None:
        return self._query().order_by("pos").values_list("pos", flat=True).first()

    def last_pos(self) -> int | None:
        return self._query().order_by("-pos").values_list("pos", flat=True).first()

    def count(self) -> int:
        return self._query().count()

    def exists(self) -> bool:
        return self._query().exists()

    def at(self, positions: Sequence[int]) -> list[Row]:
        """The rows at these positions (those that exist and match), in file order."""
        return _rows(self._query().filter(pos__in=list(positions)).order_by("pos"))

    def holders(self) -> QuerySet[Tape]:
        """The tapes of the selection that have at least one such row."""
        ids = self._query().values("tape")
        return Tape.objects.filter(pk__in=ids)

    def _query(self) -> QuerySet[EntryRow]:
        if len(self.tapes) == 1:
            rows = EntryRow.objects.filter(tape=self.tapes[0])
        else:
            rows = EntryRow.objects.filter(tape__in=self.tapes)
        if self.low is not None:
            rows = rows.filter(pos__gte=self.low)
        if self.high is not None:
            rows = rows.filter(pos__lte=self.high)
        for group in self.conditions:
            q = Q()
            for match in group:
                q |= match.q()
            rows = rows.filter(q)
        return rows


def of(tapes: Tape | Iterable[Tape]) -> Rows:
    """Every row of a tape (or of several)."""
    return Rows(tapes)


def everywhere(match: Match) -> QuerySet[Tape]:
    """The tapes, of the whole index, with at least one row that is `match`."""
    return Tape.objects.filter(pk__in=EntryRow.objects.filter(match.q()).values("tape"))


def at(tape: Tape, pos: int) -> Row | None:
    found = of(tape).at([pos])
    return found[0] if found else None


def _rows(query: QuerySet[EntryRow]) -> list[Row]:
    return [Row(*values) for values in query.values_list(*FIELDS)]
