"""PostgreSQL's docs as rows of one statement: a batch's texts, labels and docs as arrays the server
unnests, written in pipeline mode while this process reads the next batch (search.pg_writes,
search.fresh)."""

from __future__ import annotations

import selectors
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.db import connection

from .docs import COLUMNS
from .text import pg_body, pg_words

T = TypeVar("T")
META = COLUMNS.split(", ")


# A batch is one statement: each distinct text once, tokenised once by to_tsvector however many
# docs share it (agents repeat themselves: prompts, tool outputs, handoffs), each distinct set of
# the columns docs share (tape, source, kind, name, tags) once, and the rest as lists joined by
# commas (the driver dumps a Python list an element at a time; ids and ISO dates hold no comma).
# `texts` is MATERIALIZED: inlined into the join, as PostgreSQL does with a CTE read once, its
# to_tsvector ran once per doc, not once per text (a batch of the real tape: 1.17 s against 0.10 s).
PG_ROWS = (
    "labels AS (SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::text[], "
    "%s::text[], %s::text[], %s::text[]) WITH ORDINALITY "
    "AS l(tags, doc, tape_id, store_id, item, source, kind, name, label)), "
    "docs AS (SELECT * FROM unnest(string_to_array(%s, ',')::bigint[], "
    "string_to_array(%s, ',')::bigint[], string_to_array(%s, ',')::bigint[], "
    "string_to_array(%s, ',', '')::integer[], "
    "(string_to_array(%s, ','))[2:]) AS d(id, n, label, pos, date))"
)
PG_INSERT = (
    "WITH texts AS MATERIALIZED (SELECT n, body, to_tsvector('simple', words) AS tsv "
    f"FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(body, words, n)), {PG_ROWS}, "
    # The batch's ids made before as fresh docs (search.fresh) are made again here.
    "fresh AS (DELETE FROM search_fresh WHERE id BETWEEN %s AND %s), "
    "blocks AS (DELETE FROM search_chunk WHERE low >= %s AND high <= %s) "
    f"INSERT INTO search_doc (id, body, {COLUMNS}, tsv) "
    f"SELECT id, body, {COLUMNS}, tsv || array_to_tsvector(string_to_array(tags, ' ')) "
    "FROM docs JOIN texts USING (n) JOIN labels USING (label) ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in ("body", *META, "tsv"))
)


@dataclass
class PgParts:
    """Rows as PostgreSQL.row makes them, as PG_ROWS takes them: their distinct texts, the columns of
    their distinct labels, and the docs' own columns (ids, text, label, position, date); besides,
    each doc's text as its number among `texts` (from 1)."""

    texts: list[str]
    labels: list[list]
    docs: list[str]
    text_of: list[int]


def pg_parts(rows: list[tuple]) -> PgParts:
    texts: dict[str, int] = {}
    labels: dict[tuple, int] = {}
    # A column at a time (zip(*rows) took 20 ms of a 20,000-row batch's 37).
    text_of = [texts.setdefault(row[1], len(texts) + 1) for row in rows]
    label_of = [labels.setdefault(row[2], len(labels) + 1) for row in rows]
    docs = [
        ",".join([str(row[0]) for row in rows]),
        ",".join(map(str, text_of)),
        ",".join(map(str, label_of)),
        ",".join(["" if row[3] is None else str(row[3]) for row in rows]),
        "," + ",".join([row[4] for row in rows]),
    ]
    return PgParts(list(texts), [list(c) for c in zip(*labels, strict=True)], docs, text_of)


def pg_params(rows: list[tuple]) -> list:
    """PG_INSERT's parameters for rows as PostgreSQL.row makes them."""
    parts = pg_parts(rows)
    texts, ids = parts.texts, [row[0] for row in rows]
    return [
        [pg_body(t) for t in texts],
        [pg_words(t) for t in texts],
        *parts.labels,
        *parts.docs,
        *[min(ids), max(ids)] * 2,  # the range of the fresh docs and blocks it replaces
    ]


def pg_insert(params: list, meanwhile: Callable[[], T] | None = None, sql: str = PG_INSERT) -> T | None:
    """Rows into search_doc (PG_INSERT's `params`), or another such `sql`'s; `meanwhile` runs while the
    server tokenises them (the statement is sent in pipeline mode and its result read after), and
    what it returns is returned."""
    import psycopg  # PostgreSQL's driver: installed where this engine runs

    connection.ensure_connection()
    conn = connection.connection
    # A cursor that binds its parameters (Django's quotes them into the SQL as text).
    with psycopg.Cursor(conn) as cursor:
        if meanwhile is None:
            cursor.execute(sql, params)
            return None
        with conn.pipeline():
            cursor.execute(sql, params)
            # Sent whole now (libpq sends a pipeline's statement only as far as the socket takes it
            # at once): the server tokenises while this process goes on.
            with selectors.DefaultSelector() as sending:  # no select(): a socket past fd 1024 is fine
                sending.register(conn.pgconn.socket, selectors.EVENT_WRITE)
                while conn.pgconn.flush():
                    sending.select()
            return meanwhile()
