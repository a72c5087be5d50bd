"""What a search doc is to a query: the row a match reads as, the filters, and the tags they match by.

A doc's id says what it is: tape_id << 32 | pos for an entry, -(store_id << 32 | n) for a memory
item, so a tape's docs (or a phase of them) are one id range, which both engines find by index.
Filters that many docs share (kind, source, role) are tags: tokens of the full-text index itself,
so a filtered query is one walk of the index, newest first, and never reads a row it then drops.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import numpy as np
from django.db import connection

COLUMNS = "doc, tape_id, pos, store_id, item, source, kind, name, date"
FIRST_ID, LAST_ID = -(1 << 63), (1 << 63) - 1
SHIFT = 32
LAST_POS = (1 << SHIFT) - 1
BITMAP_IDS = 1 << 21  # tape ids a Picked's bitmap covers at most (a 2 MB blob); past them, a subquery


def tape_span(tape_id: int, first: int = 0, last: int = LAST_POS) -> tuple[int, int]:
    return tape_id << SHIFT | first, tape_id << SHIFT | min(last, LAST_POS)


def store_span(store_id: int) -> tuple[int, int]:
    return -(store_id << SHIFT | LAST_POS), -(store_id << SHIFT)


@dataclass(frozen=True)
class Picked:
    """The tapes a query of the tapes table picks (its SQL selects their ids as `pk`; `sized`, the
    same query, selects their entries as `next_pos` besides)."""

    sql: str
    params: tuple
    sized: str = ""

    def bitmap(self) -> bytes | None:
        """Byte n is 1 for tape n: a doc's tape is one byte read (SQLite's substr of a blob), where an
        IN list looks each one up in a b-tree. Measured at scale 1, a 90-day filter keeping 2,400
        tapes: 0.9 ms to make, then the walk of a common word 1 ms slower, not 2.7 ms (the tapes'
        ids as a list bound to the query: 2.6 ms more to read and bind; IN a subquery: 2.7 ms).
        b"" when no tape is picked; None when their ids run past BITMAP_IDS."""
        listed = fetch(f"SELECT group_concat(pk) FROM ({self.sql})", list(self.params))[0][0]
        if not listed:
            return b""
        ids = np.fromstring(listed, dtype=np.int64, sep=",")  # 0.13 ms sooner than np.array of the split
        if ids.max() >= BITMAP_IDS:
            return None
        bits = np.zeros(int(ids.max()) + 1, dtype=np.uint8)
        bits[ids] = 1
        return bits.tobytes()

    def sizes(self) -> list[tuple[int, int]]:
        """The picked tapes' ids and entries, the highest id first (on PostgreSQL; as text, which
        numpy reads in a tenth of the time the driver takes over two arrays of 2,400 numbers, and
        sorts: the server's ORDER BY in the aggregate took 2 ms of its 4 at scale 1)."""
        listed = fetch(
            f"SELECT string_agg(pk || ',' || next_pos, ',') FROM ({self.sized}) AS picked", list(self.params)
        )[0][0]
        pairs = np.fromstring(listed or "", dtype=np.int64, sep=",").reshape(-1, 2)
        pairs = pairs[np.argsort(-pairs[:, 0])]  # the ids are the tapes' keys: no two alike
        return list(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist(), strict=True))


@dataclass
class Found:
    """One matching doc as the table holds it."""

    id: int
    doc: str
    tape_id: int | None
    pos: int | None
    store_id: int | None
    item: str
    source: str
    kind: str
    name: str
    date: str
    score: float


@functools.cache  # few values (kinds, sources, roles), met once per entry
def tag(field: str, value: str) -> str:
    """The token a doc carries for a filter value: letters and digits only, so both tokenizers keep it
    whole, and no word of a query (folded, never starting `zz`) is ever one of them."""
    return f"zz{field}" + hashlib.blake2b(value.encode(), digest_size=6).hexdigest()


@functools.lru_cache(maxsize=4096)  # met once per entry: a tape's kinds, roles and event names are few
def tags(source: str, kind: str, name: str) -> str:
    """The tags of a doc, space-separated: its source, its kind, and a message's role."""
    found = [tag("s", source), tag("k", kind)]
    if kind == "message":
        found.append(tag("r", name))
    return " ".join(found)


class Where:
    """The filters of a query: an id range and tags (both answered by the full-text index), and SQL
    conditions on the other columns with %s placeholders, and their values."""

    def __init__(self) -> None:
        self.first, self.last = FIRST_ID, LAST_ID
        self.tags: list[tuple[str, ...]] = []  # each: one of these tags
        self.conditions: list[str] = []
        self.params: list[object] = []
        self.tapes: list[tuple[bool, list[int] | Picked, bool]] = []  # (keep, tapes, redundant): see of_tapes
        self.bitmaps: dict[Picked, bytes | None] = {}  # made once for this query and its narrowings
        self.sized: dict[Picked, list[tuple[int, int]]] = {}  # likewise
        self.between: tuple[str, str] = ("", "")  # the dates of `dates` as text, "" where open
        self.spans: list[tuple[int, int]] = []  # id ranges within first and last, one of which holds the doc
        self.span_tapes: list[int] = []  # the tapes of those ranges (of gaps between them, none)

    def add(self, condition: str, *params: object) -> None:
        self.conditions.append(condition)
        self.params.extend(params)

    def span(self, first: int, last: int) -> None:
        """Only the docs with an id from `first` to `last`."""
        self.first, self.last = max(self.first, first), min(self.last, last)

    def tagged(self, field: str, *values: str) -> None:
        """Only the docs tagged with one of these values of a field."""
        self.tags.append(tuple(tag(field, v) for v in values))

    def narrowed(self, first: int, last: int, also: str = "") -> Where:
        """These filters within an id range (and a condition without parameters `also`, such as an
        index's predicate), leaving these as they are."""
        where = Where()
        where.first, where.last, where.tags = self.first, self.last, self.tags
        where.conditions = [*self.conditions, also] if also else self.conditions
        where.params = list(self.params) if also else self.params  # a list of its own with its conditions
        where.tapes = self.tapes
        where.bitmaps, where.sized = self.bitmaps, self.sized
        where.between = self.between
        where.span(first, last)
        return where

    def within(self, spans: list[tuple[int, int]] | None, tapes: list[int], first: int, last: int) -> Where:
        """This Where narrowed, its docs in one of these id ranges of these tapes besides, if any
        (PostgreSQL's windows of a date filter's tapes: see windows.Windows)."""
        where = self.narrowed(first, last)
        where.spans, where.span_tapes = spans or [], tapes
        return where

    def ids_sql(self, column: str) -> tuple[str, list]:
        """The id range, or the spans within it, on `column`. Spans are written as numbers: 600 bound
        values took the driver 3 ms to quote in. (Nor bounded by first and last again: PostgreSQL then
        took 45 ms to plan 300 spans, 2 ms without.) Where the plan reads rows by the full-text index
        alone (a phrase, its matches underestimated), each row is tested: first its tape against a
        hashed array, then against the spans, those of the most docs first (at scale 1, a phrase's
        33,000 matches in two windows: 300 ms tested against the spans alone, 75-100 ms so)."""
        if not self.spans:
            return f"{column} BETWEEN %s AND %s", [self.first, self.last]
        tapes = "{" + ",".join(str(int(tape)) for tape in self.span_tapes) + "}"
        spans = " OR ".join(f"{column} BETWEEN {int(a)} AND {int(b)}" for a, b in self.spans)
        return f"({column} >> {SHIFT}) = ANY('{tapes}'::bigint[]) AND ({spans})", []

    def of_tapes(self, ids: list[int] | Picked, *, keep: bool, redundant: bool = False) -> None:
        """Only the docs of these tapes (`keep`), or only those of the others: told by the doc's id
        alone, so the engine never reads a row, nor walks a tag, to keep or drop a doc. A
        `redundant` list says again what other conditions say: an engine may leave it out."""
        if ids or keep:  # a Picked is always true
            self.tapes.append((keep, ids, redundant))

    def picked(self) -> Picked | None:
        """The tapes a date filter keeps (see filters._dated), if any."""
        return next((ids for keep, ids, _ in self.tapes if keep and isinstance(ids, Picked)), None)

    def bitmap(self, picked: Picked) -> bytes | None:
        """The Picked's bitmap, made once for this query and its narrowings."""
        if picked not in self.bitmaps:
            self.bitmaps[picked] = picked.bitmap()
        return self.bitmaps[picked]

    def sizes(self, picked: Picked) -> list[tuple[int, int]]:
        """The Picked's sizes, read once for this query and its narrowings."""
        if picked not in self.sized:
            self.sized[picked] = picked.sizes()
        return self.sized[picked]

    def tapes_sql(self, id_column: str, *, placeholders: bool, redundant: bool) -> tuple[str, list]:
        """The tape conditions on `id_column` (with the `redundant` ones or not): each list as %s
        placeholders and each Picked as a bitmap (SQLite), else one array and a subquery."""
        sql, params = [], []
        for keep, ids, again in self.tapes:
            if again and not redundant:
                continue
            if isinstance(ids, Picked) and placeholders and (bits := self.bitmap(ids)) is not None:
                # A doc of a tape past the blob's end reads b"": not kept. (A memory doc's negative id
                # would count from the end: a tape's Where spans positive ids only.)
                sql.append(f"substr(%s, ({id_column} >> {SHIFT}) + 1, 1) {'=' if keep else '<>'} x'01'")
                params.append(bits)
            elif isinstance(ids, Picked):
                sql.append(f"({id_column} >> {SHIFT}) {'' if keep else 'NOT '}IN ({ids.sql})")
                params += ids.params
            elif placeholders:
                listed = ", ".join(["%s"] * len(ids)) or "NULL"
                sql.append(f"({id_column} >> {SHIFT}) {'' if keep else 'NOT '}IN ({listed})")
                params += ids
            else:
                sql.append(f"({id_column} >> {SHIFT}) {'= ANY' if keep else '<> ALL'}(%s)")
                params.append(ids)
        return " AND ".join(sql) or "1 = 1", params

    def below(self, column: str, value: str, separators: str) -> None:
        """`column` is `value`, or starts with `value` and one of the separators."""
        escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        likes = [f"{column} LIKE %s ESCAPE '\\'" for _ in separators]
        self.add(f"({column} = %s OR {' OR '.join(likes)})", value, *(escaped + s + "%" for s in separators))

    def dates(self, since: date | None, until: date | None) -> None:
        """A date bounds whole days (UTC); a datetime bounds to the moment; both ends are included."""
        if since:
            self.add("date >= %s", _moment(since))
        if until:
            end = until + (timedelta(microseconds=1) if isinstance(until, datetime) else timedelta(days=1))
            self.add("date <> '' AND date < %s", _moment(end))
        self.between = (_moment(since) if since else "", _moment(end) if until else "")

    @property
    def sql(self) -> str:
        return " AND ".join(self.conditions) or "1 = 1"


def ranked(found: list[Found], order: str) -> list[Found]:
    """Candidates in the order of a page: best first ("relevance"), or newest first ("time"), as
    `order_sql` orders them in a statement."""
    if order == "relevance":
        return sorted(found, key=lambda r: (r.score, r.id), reverse=True)
    return sorted(found, key=lambda r: (r.date, r.id), reverse=True)  # ISO dates as text: in time order


def order_sql(order: str) -> str:
    """The ORDER BY of a page's candidates (see `ranked`)."""
    return "score DESC, id DESC" if order == "relevance" else "date DESC, id DESC"


def date_text(value: datetime | None) -> str:
    """A date as text that sorts in time order (UTC, ISO 8601 without the offset); "" for an unknown time.

    isoformat() leaves out zero microseconds; the shorter text still sorts first, as it should.
    """
    if value is None:
        return ""
    text = value.isoformat()
    if text.endswith("+00:00"):  # the common case, and the cheap one
        return text[:-6]
    return value.astimezone(UTC).replace(tzinfo=None).isoformat()


def _moment(value: date) -> str:
    if isinstance(value, datetime):
        return date_text(value if value.tzinfo else value.replace(tzinfo=UTC))
    return value.isoformat()


def fetch(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()
