"""The two engines behind search, one code path each: SQLite FTS5 and PostgreSQL tsvector with GIN.

Both hold the same docs in a table `search_doc` (made by this app's migration) and answer the same
queries: every word and phrase must match, best first by bm25 or ts_rank, or newest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db import connection

from .text import MARK, START, STOP, fts_body, fts_query, pg_body, pg_query, pg_words

COLUMNS = "doc, tape_id, pos, store_id, item, source, kind, name, date"
SNIPPET_WORDS = 24
ELLIPSIS = "…"
HEADLINE = (
    f'StartSel={START}, StopSel={STOP}, MaxFragments=2, MaxWords=20, MinWords=8, FragmentDelimiter=" … "'
)


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


class Where:
    """The filters of a query: SQL conditions with %s placeholders, and their values."""

    def __init__(self) -> None:
        self.conditions: list[str] = []
        self.params: list[object] = []

    def add(self, condition: str, *params: object) -> None:
        self.conditions.append(condition)
        self.params.extend(params)

    def narrowed(self, condition: str, *params: object) -> Where:
        """These filters and one more, leaving these as they are."""
        where = Where()
        where.conditions, where.params = [*self.conditions, condition], [*self.params, *params]
        return where

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

    @property
    def sql(self) -> str:
        return " AND ".join(self.conditions) or "1 = 1"


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


def _fetch(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


class _Table:
    """Writing docs is the same on both backends but for the name of the id column."""

    id: str
    INSERT: str

    def insert(self, rows: list[tuple]) -> None:
        if rows:
            with connection.cursor() as cursor:
                cursor.executemany(self.INSERT, rows)

    def delete(self, first: int, last: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM search_doc WHERE {self.id} BETWEEN %s AND %s", [first, last])

    def bodies(self, ids: list[int]) -> dict[int, str]:
        """The searchable text of these docs as it was given (the markers both engines add taken out)."""
        if not ids:
            return {}
        sql = f"SELECT {self.id}, body FROM search_doc WHERE {self.id} IN ({', '.join(['%s'] * len(ids))})"
        return {doc_id: body.replace(MARK, "") for doc_id, body in _fetch(sql, ids)}


class SQLite(_Table):
    """An FTS5 table: the text in `body`, the rest UNINDEXED; the rowid is the doc's id."""

    id = "rowid"
    # OR REPLACE: docs left behind by a flush of the index tables (which sends no delete signals) give way.
    INSERT = (
        f"INSERT OR REPLACE INTO search_doc (rowid, body, {COLUMNS}) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    )

    def row(self, doc_id: int, text: str, *fields: object) -> tuple:
        """The values to insert: `fields` in the order of COLUMNS."""
        return (doc_id, fts_body(text), *fields)

    def find(self, q: str, where: Where, order: str, limit: int, offset: int) -> list[Found]:
        match = fts_query(q)
        if not match:
            return []
        # FTS5's rank is bm25(): lower is better.
        order_by = "rank" if order == "relevance" else "date DESC, rowid DESC"
        sql = (
            f"SELECT rowid, {COLUMNS}, -rank FROM search_doc WHERE search_doc MATCH %s AND {where.sql} "
            f"ORDER BY {order_by} LIMIT %s OFFSET %s"
        )
        return [Found(*row) for row in _fetch(sql, [match, *where.params, limit, offset])]

    def count(self, q: str, where: Where, limit: int) -> int:
        """How many docs match, counted up to `limit`."""
        match = fts_query(q)
        if not match:
            return 0
        sql = (
            "SELECT COUNT(*) FROM (SELECT 1 FROM search_doc "
            f"WHERE search_doc MATCH %s AND {where.sql} LIMIT %s)"
        )
        return _fetch(sql, [match, *where.params, limit])[0][0]

    def snippets(self, q: str, ids: list[int]) -> dict[int, str]:
        """The marked snippets of these matching docs: made for the hits shown, never the whole window."""
        match = fts_query(q)
        if not match or not ids:
            return {}
        sql = (
            "SELECT rowid, snippet(search_doc, 0, %s, %s, %s, %s) FROM search_doc "
            f"WHERE search_doc MATCH %s AND rowid IN ({', '.join(['%s'] * len(ids))})"
        )
        return dict(_fetch(sql, [START, STOP, ELLIPSIS, SNIPPET_WORDS, match, *ids]))


class PostgreSQL(_Table):
    """A table with a tsvector of the doc's words (GIN-indexed) beside the text that headlines show."""

    id = "id"
    INSERT = (
        f"INSERT INTO search_doc (id, body, {COLUMNS}, tsv) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, to_tsvector('simple', %s)) "
        "ON CONFLICT (id) DO UPDATE SET "
        + ", ".join(f"{c} = EXCLUDED.{c}" for c in ("body", *COLUMNS.split(", "), "tsv"))
    )

    def row(self, doc_id: int, text: str, *fields: object) -> tuple:
        """The values to insert: `fields` in the order of COLUMNS."""
        return (doc_id, pg_body(text), *fields, pg_words(text))

    def find(self, q: str, where: Where, order: str, limit: int, offset: int) -> list[Found]:
        query = pg_query(q)
        if not query:
            return []
        # Normalization 1 divides by the log of the doc's length, as bm25 weighs long docs down.
        order_by = "score DESC, id DESC" if order == "relevance" else "date DESC, id DESC"
        sql = (
            f"SELECT id, {COLUMNS}, ts_rank(tsv, query, 1) AS score "
            f"FROM search_doc, to_tsquery('simple', %s) AS query WHERE tsv @@ query AND {where.sql} "
            f"ORDER BY {order_by} LIMIT %s OFFSET %s"
        )
        return [Found(*row) for row in _fetch(sql, [query, *where.params, limit, offset])]

    def count(self, q: str, where: Where, limit: int) -> int:
        """How many docs match, counted up to `limit`."""
        query = pg_query(q)
        if not query:
            return 0
        sql = (
            "SELECT COUNT(*) FROM (SELECT 1 FROM search_doc, to_tsquery('simple', %s) AS query "
            f"WHERE tsv @@ query AND {where.sql} LIMIT %s) AS found"
        )
        return _fetch(sql, [query, *where.params, limit])[0][0]

    def snippets(self, q: str, ids: list[int]) -> dict[int, str]:
        """The marked snippets of these matching docs: made for the hits shown, never the whole window."""
        query = pg_query(q)
        if not query or not ids:
            return {}
        sql = (
            "SELECT id, ts_headline('simple', body, query, %s) "
            "FROM search_doc, to_tsquery('simple', %s) AS query WHERE id = ANY(%s)"
        )
        return dict(_fetch(sql, [HEADLINE, query, ids]))


ENGINES = {"sqlite": SQLite, "postgresql": PostgreSQL}


def current() -> SQLite | PostgreSQL | None:
    """The engine of the index database, or None where full-text search is not supported."""
    engine = ENGINES.get(connection.vendor)
    return engine() if engine else None
