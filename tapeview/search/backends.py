"""The two engines behind search, one code path each: SQLite FTS5 and PostgreSQL tsvector with GIN.

Both answer the same queries: every word and phrase must match. Ranking is bounded: the engine walks
its index newest doc first (the highest ids) and ranks only the first CANDIDATES matches (or as many
as the page asked for needs), so a word found in millions of docs costs what a rare one does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TypeVar

from django.db import OperationalError, connection, transaction

from . import fresh, fresh_search, slices, windows, writes
from .docs import COLUMNS, SHIFT, Found, Where, fetch, order_sql, ranked, tape_span
from .pg_writes import PostgreSQLWrites
from .text import MARK, START, STOP, fts_body, fts_query, pg_query, terms

ALL = 1 << 62  # a limit no count reaches
PROGRESS_STEPS = 1000  # SQLite VM instructions between two looks at a count's deadline
CANDIDATES = 2000  # the newest matches ranked (by bm25 or ts_rank, or by date)
SNIPPET_WORDS = 24
ELLIPSIS = "…"
HEADLINE = (
    f'StartSel={START}, StopSel={STOP}, MaxFragments=2, MaxWords=20, MinWords=8, FragmentDelimiter=" … "'
)
T = TypeVar("T")


def candidates(limit: int, offset: int) -> int:
    return max(CANDIDATES, offset + limit)


def _scored(inner: str) -> str:
    """`inner`'s docs scored by the tsquery of the first parameter (normalization 1: as bm25 does)."""
    return f"SELECT id, {COLUMNS}, ts_rank(tsv, to_tsquery('simple', %s), 1) AS score FROM ({inner}) AS found"


class SQLite:
    """An FTS5 table of the text and the tags (rowid: the doc's id) and a plain table `search_meta` of
    the other columns: a filter on them reads a small row, never the doc's text."""

    def row(self, doc_id: int, text: str, tags: str, *fields: object) -> tuple:
        """The values to insert: `fields` in the order of COLUMNS."""
        return (doc_id, fts_body(text), tags, *fields)

    def label(self, tags: str, tape_id: int, source: str, kind: str, name: str) -> tuple:
        """What the rows of a tape's entries of one kind and name share (see `entry`)."""
        return tags, tape_id, source, kind, name

    def entry(self, doc_id: int, text: str, label: tuple, pos: int, date: str) -> tuple:
        """A tape entry's row as the search pass makes it: the columns of its staging table (writes.TABLE)."""
        tags, tape_id, source, kind, name = label
        return doc_id, fts_body(text), tags, tape_id, pos, source, kind, name, date

    def insert(self, rows: list[tuple]) -> None:
        self.write(writes.Staged(rows))()

    def prepare(self, rows: list[tuple], apart: bool = False) -> writes.Staged:
        """What `write` takes of the search pass's rows (`entry`), made as it reads them (writes.Staged)."""
        return writes.Staged(rows, apart, entries=True)

    def write(
        self, staged: writes.Staged, meanwhile: Callable[[], T] | None = None
    ) -> Callable[[], T | None]:
        """The rows in; `meanwhile` runs beside FTS5's tokenising. Returns what gives its result
        (writes.sqlite_insert)."""
        if staged.ids is None:
            return writes.Ahead(meanwhile).result
        # A doc made again (a tape read again after a flush of the index) takes the old one's place:
        # the old ones of the batch's id range go first, so the rows go in with a plain INSERT (FTS5's
        # OR REPLACE looks every rowid up first, and reads the text of each it replaces).
        if fetch("SELECT 1 FROM search_meta WHERE id BETWEEN %s AND %s LIMIT 1", list(staged.ids)):
            self.delete(*staged.ids)
        return writes.sqlite_insert(staged, meanwhile)

    def passing(self) -> AbstractContextManager[None]:
        """What a search pass writes under (see writes.sqlite_pass)."""
        return writes.sqlite_pass()

    def delete(self, first: int, last: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM search_doc WHERE rowid BETWEEN %s AND %s", [first, last])
            cursor.execute("DELETE FROM search_meta WHERE id BETWEEN %s AND %s", [first, last])

    def bodies(self, ids: list[int]) -> dict[int, str]:
        """The searchable text of these docs as it was given (the markers both engines add taken out)."""
        if not ids:
            return {}
        sql = f"SELECT rowid, body FROM search_doc WHERE rowid IN ({', '.join(['%s'] * len(ids))})"
        return {doc_id: body.replace(MARK, "") for doc_id, body in fetch(sql, ids)}

    def _match(self, q: str, where: Where) -> str:
        words = fts_query(q)
        if not words:
            return ""
        any_of = [" OR ".join(alternatives) for alternatives in where.tags]
        return " AND ".join([f"body : ({words})", *(f"tags : ({x})" for x in any_of)])

    def _matching(self, match: str, where: Where, limit: int | None, *, score: bool) -> tuple[str, list]:
        """The newest `limit` matching docs: the index walked from its highest rowid down, the other
        columns read only where a condition needs them; every one of them, in no order, for None."""
        rank = ", -bm25(search_doc, 1.0, 0.0) AS score" if score else ""
        joined = "JOIN search_meta ON search_meta.id = search_doc.rowid" if where.conditions else ""
        rank += f", {COLUMNS}" if joined and score else ""  # read here, not looked up again by find
        # A date's tape list spares FTS5 a look at search_meta for each match of a tape out of range.
        tapes, tape_ids = where.tapes_sql("search_doc.rowid", placeholders=True, redundant=True)
        sql = (
            f"SELECT search_doc.rowid AS id{rank} FROM search_doc {joined} "
            f"WHERE search_doc MATCH %s AND search_doc.rowid BETWEEN %s AND %s AND {tapes} AND {where.sql}"
        )
        params = [match, where.first, where.last, *tape_ids, *where.params]
        if limit is None:
            return sql, params
        return f"{sql} ORDER BY search_doc.rowid DESC LIMIT %s", [*params, limit]

    def find(self, q: str, where: Where, order: str, limit: int, offset: int) -> list[Found]:
        match = self._match(q, where)
        if not match:
            return []
        inner, params = self._matching(match, where, candidates(limit, offset), score=True)
        meta = "" if where.conditions else "JOIN search_meta USING (id)"
        sql = f"SELECT id, {COLUMNS}, score FROM ({inner}) {meta} ORDER BY {order_sql(order)}"
        return [Found(*row) for row in fetch(f"{sql} LIMIT %s OFFSET %s", [*params, limit, offset])]

    def count(self, q: str, where: Where, limit: int | None) -> int:
        """How many docs match, counted up to `limit` (None: all of them)."""
        match = self._match(q, where)
        if not match:
            return 0
        inner, params = self._matching(match, where, limit, score=False)
        return fetch(f"SELECT COUNT(*) FROM ({inner})", params)[0][0]

    def count_tapes(self, q: str, where: Where, sizes: dict[int, int], limit: int) -> dict[int, int]:
        """How many docs of each of these tapes (id: its next position) match, each counted up to `limit`:
        each tape's span is a range of FTS5's doclists."""
        return {tape_id: self.count(q, where.narrowed(*tape_span(tape_id)), limit) for tape_id in sizes}

    def count_within(self, q: str, where: Where, seconds: float) -> int | None:
        """How many docs match, all of them, or None where counting takes more than `seconds`."""
        if seconds <= 0:
            return None
        # SQLite calls the handler every PROGRESS_STEPS instructions of its VM; a true result
        # interrupts the statement, which then raises "interrupted".
        deadline = time.monotonic() + seconds
        connection.ensure_connection()
        raw = connection.connection
        raw.set_progress_handler(lambda: time.monotonic() > deadline, PROGRESS_STEPS)
        try:
            return self.count(q, where, None)
        except OperationalError as exc:
            if "interrupted" not in str(exc):
                raise
            return None
        finally:
            raw.set_progress_handler(None, PROGRESS_STEPS)

    def snippets(self, q: str, ids: list[int]) -> dict[int, str]:
        """The marked snippets of these matching docs: made for the hits shown, never the whole window."""
        match = self._match(q, Where())
        if not match or not ids:
            return {}
        # One walk of the index from the lowest id to the highest: the hits of a page are among the
        # newest candidates, so it meets few other matches. `rowid + 0` keeps the list out of the
        # plan (FTS5 would look each id up on its own, a seek into every term's doclist).
        sql = (
            "SELECT rowid, snippet(search_doc, 0, %s, %s, %s, %s) FROM search_doc "
            "WHERE search_doc MATCH %s AND rowid BETWEEN %s AND %s "
            f"AND rowid + 0 IN ({', '.join(['%s'] * len(ids))})"
        )
        return dict(fetch(sql, [START, STOP, ELLIPSIS, SNIPPET_WORDS, match, min(ids), max(ids), *ids]))

    def refine(self, deadline: float | None) -> int:
        """Nothing to do: FTS5 indexes a doc as it is written."""
        return 0

    def waiting(self) -> int:
        return 0

    def analyze(self) -> None:
        """Nothing to do: FTS5's plan is always the walk of its index."""

    def tidy(self, whole: bool) -> None:
        """Nothing to do: FTS5 walks its index newest first already."""


class PostgreSQL(PostgreSQLWrites):
    """A table with a tsvector of the doc's words and tags (GIN-indexed) beside the text of headlines;
    the docs of a big batch fresh meanwhile (see search.fresh). The write side: search.pg_writes."""

    def label(self, tags: str, tape_id: int, source: str, kind: str, name: str) -> tuple:
        return tags, "entry", tape_id, None, "", source, kind, name

    def entry(self, doc_id: int, text: str, label: tuple, pos: int, date: str) -> tuple:
        """A tape entry's row, as `row` makes it: its `label` shared with the entries of its kind and name."""
        return doc_id, text, label, pos, date

    def bodies(self, ids: list[int]) -> dict[int, str]:
        """The searchable text of these docs as it was given (the markers both engines add taken out)."""
        if not ids:
            return {}
        found = fresh_search.either("SELECT id, body FROM {} WHERE id = ANY(%s)", ids, lambda ids: [ids])
        return {doc_id: body.replace(MARK, "") for doc_id, body in found.items()}

    def _query(self, q: str, where: Where) -> str:
        words = pg_query(q)
        if not words:
            return ""
        return " & ".join([f"({words})", *("(" + " | ".join(alts) + ")" for alts in where.tags)])

    def _matching(
        self, query: str, where: Where, limit: int, walk: bool = False, spans: tuple[str, str] | None = None
    ) -> tuple[str, list]:
        """The newest `limit` matching docs: the planner walks the primary key down for a common word
        and takes the GIN index for a rare one (ANALYZE tells it which is which); a `walk` of `spans`
        (a date filter's tapes, see windows.Windows) walks only theirs."""
        # The date's tape list is left out: the row is read anyway, and a long array costs more per row
        # than the date it stands for (measured: 1.3-2x slower).
        tapes, tape_ids = where.tapes_sql("id", placeholders=False, redundant=False)
        # A `walk` the GIN index cannot answer: the function behind @@, which no index serves (a
        # phrase's estimate, far too low, would have the planner read every match of the table).
        match = "ts_match_vq(tsv, to_tsquery('simple', %s))" if walk else "tsv @@ to_tsquery('simple', %s)"
        within, bounds = where.ids_sql("id") if not spans else ("id BETWEEN ranged.low AND ranged.high", [])
        sql = (
            f"SELECT id, {COLUMNS}, tsv FROM search_doc WHERE {match} "
            f"AND {within} AND {tapes} AND {where.sql} ORDER BY id DESC LIMIT %s"
        )
        params = [query, *bounds, *tape_ids, *where.params, limit]
        if spans:  # walked range by range, newest first: the nested loop keeps the order of the ranges
            ranges = "unnest(%s::bigint[], %s::bigint[]) AS ranged(low, high)"
            sql, params = (
                f"SELECT walked.* FROM {ranges}, LATERAL ({sql}) AS walked LIMIT %s",
                [*spans, *params, limit],
            )
        return sql, params

    def find(self, q: str, where: Where, order: str, limit: int, offset: int) -> list[Found]:
        """The newest candidates ranked, of the indexed docs and the fresh ones (see search.fresh), both
        read in one snapshot: a block moved into the index meanwhile is found once."""
        if not fresh.pending():
            return self._find(q, where, order, limit, offset)
        query = self._query(q, where)
        if not query:
            return []
        wanted = candidates(limit, offset)
        with fresh_search.snapshot():
            both = fresh_search.found(q, query, where, wanted) + self._find(q, where, order, wanted, 0)
        newest = sorted(
            {found.id: found for found in both}.values(), key=lambda found: found.id, reverse=True
        )
        return ranked(newest[:wanted], order)[offset : offset + limit]

    def _find(self, q: str, where: Where, order: str, limit: int, offset: int) -> list[Found]:
        """The newest indexed candidates ranked. Where the statistics say the query matches neither most docs
        nor few, they are taken slice by slice from the newest docs down (see `slices`), or where
        there are no slices, window by window (see `windows.Windows`)."""
        query = self._query(q, where)
        if not query:
            return []
        wanted = candidates(limit, offset)
        ranges = windows.Windows(where, wanted, terms(q))
        cut = slices.pieces(where.first, where.last) if ranges.buckets or ranges.walk else []
        if not cut:
            return self._windowed(q, query, where, ranges, order, limit, offset)

        def piece(within: Where, left: int, sliced: slices.Slice | None) -> list[Found]:
            if sliced:  # one statement, which names the slice's range (see slices.candidates)
                inner, params = self._matching(query, within, left)
                return [Found(*row) for row in fetch(_scored(inner), [pg_query(q), *params])]
            # The ids no slice holds: windows, as before.
            return self._windowed(q, query, within, windows.Windows(within, left, terms(q)), order, left, 0)

        return ranked(slices.candidates(where, cut, wanted, piece), order)[offset : offset + limit]

    def _windowed(
        self, q: str, query: str, where: Where, ranges: windows.Windows, order: str, limit: int, offset: int
    ) -> list[Found]:
        """The newest `ranges.wanted` candidates, ranked and cut to the page, window by window."""
        wanted = ranges.wanted
        found: list[Found] = []
        with windows.serial(ranges.buckets > 0):
            for first, last, spans, tapes in ranges:
                window = where.within(spans, tapes, first, last)
                walked = ranges.spans() if ranges.walk and ranges.tapes else None
                inner, params = self._matching(query, window, wanted - len(found), ranges.walk, walked)
                sql = f"{_scored(inner)} ORDER BY {order_sql(order)}"
                if ranges.taken == 1 and first == where.first:  # one range: the page is all it returns
                    page = fetch(f"{sql} LIMIT %s OFFSET %s", [pg_query(q), *params, limit, offset])
                    return [Found(*row) for row in page]
                found += [Found(*row) for row in fetch(sql, [pg_query(q), *params])]
                ranges.found = len(found)
        if ranges.taken > 1:
            found = ranked(found, order)
        return found[offset : offset + limit]

    def count(self, q: str, where: Where, limit: int | None) -> int:
        """How many docs match, counted up to `limit` (None: all of them; the fresh ones too, in the
        same snapshot)."""
        query = self._query(q, where)
        if not query:
            return 0
        inner, params = self._counted(query, where, limit)
        pending = fresh.pending()
        with fresh_search.snapshot() if pending else nullcontext():
            counted = fetch(f"SELECT COUNT(*) FROM ({inner}) AS found", params)[0][0]
            if pending and (limit is None or counted < limit):
                left = ALL if limit is None else limit - counted
                counted += fresh_search.counted(q, query, where, left)
        return counted

    def _counted(self, query: str, where: Where, limit: int | None) -> tuple[str, list]:
        """The matching docs a count reads: any `limit` of them, or all. In no order: the newest first
        (as `_matching` finds them) read every match's row and sorted them all before the limit, where
        the GIN index's bitmap read in the table's order stops at the limit (a word in 36,000 of 1.1M
        docs: 40 -> 18 ms warm)."""
        tapes, tape_ids = where.tapes_sql("id", placeholders=False, redundant=False)
        within, bounds = where.ids_sql("id")
        sql = (
            f"SELECT 1 FROM search_doc WHERE tsv @@ to_tsquery('simple', %s) "
            f"AND {within} AND {tapes} AND {where.sql}"
        )
        params = [query, *bounds, *tape_ids, *where.params]
        if limit is None:
            return sql, params
        return f"{sql} LIMIT %s", [*params, limit]

    def count_tapes(self, q: str, where: Where, sizes: dict[int, int], limit: int) -> dict[int, int]:
        """How many docs of each of these tapes (id: its next position) match, each counted up to `limit`.
        The tapes with fewer positions than `limit` are counted in one statement, grouped by tape: each
        tape's own count read the GIN index's matches of the whole table again (a common word on a page
        of 23 tapes: 445 ms), one statement reads them once. A bigger tape is counted on its own, capped."""
        query = self._query(q, where)
        if not query:
            return dict.fromkeys(sizes, 0)
        small = [] if fresh.pending() else [tape_id for tape_id, size in sizes.items() if size < limit]
        counted = dict.fromkeys(small, 0)
        spans = [
            (max(low, where.first), min(high, where.last))
            for low, high in sorted((tape_span(tape_id) for tape_id in small), reverse=True)
        ]
        spans = [(low, high) for low, high in spans if low <= high]
        if spans:
            within = where.within(spans, small, spans[-1][0], spans[0][1])
            inner, params = self._counted(query, within, None)
            grouped = inner.replace("SELECT 1 FROM", f"SELECT id >> {SHIFT} AS tape FROM", 1)
            counted.update(fetch(f"SELECT tape, count(*) FROM ({grouped}) AS found GROUP BY tape", params))
        for tape_id in sizes.keys() - counted.keys():
            counted[tape_id] = self.count(q, where.narrowed(*tape_span(tape_id)), limit)
        return counted

    def count_within(self, q: str, where: Where, seconds: float) -> int | None:
        """How many docs match, all of them, or None where counting takes more than `seconds`."""
        if seconds <= 0:
            return None
        outer = connection.in_atomic_block
        try:
            # A savepoint of its own: a cancelled statement leaves the caller's transaction usable.
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT current_setting('statement_timeout'), set_config('statement_timeout', %s, true)",
                    [f"{max(1, round(seconds * 1000))}ms"],
                )
                before = cursor.fetchone()[0]
                counted = self.count(q, where, None)
                if outer:  # SET LOCAL lasts until the end of the transaction: the caller's gets its own back
                    cursor.execute("SELECT set_config('statement_timeout', %s, true)", [before])
                return counted
        except OperationalError as exc:
            from psycopg.errors import QueryCanceled  # PostgreSQL's driver: installed where this engine runs

            if not isinstance(exc.__cause__, QueryCanceled):
                raise
            return None

    def snippets(self, q: str, ids: list[int]) -> dict[int, str]:
        """The marked snippets of these matching docs: made for the hits shown, never the whole window."""
        query = pg_query(q)
        if not query or not ids:
            return {}
        headline = (
            "SELECT id, ts_headline('simple', body, to_tsquery('simple', %s), %s) FROM {} WHERE id = ANY(%s)"
        )
        return fresh_search.either(headline, ids, lambda ids: [query, HEADLINE, ids])


ENGINES = {"sqlite": SQLite, "postgresql": PostgreSQL}


def current() -> SQLite | PostgreSQL | None:
    """The engine of the index database, or None where full-text search is not supported."""
    engine = ENGINES.get(connection.vendor)
    return engine() if engine else None
