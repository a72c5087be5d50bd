"""PostgreSQL's fresh docs: searchable before the GIN index holds them.

The GIN index holds each word of each doc: for the real 200,000-entry tape, 10 million (word, doc)
pairs, which cost the server three times the search pass's budget (docs/performance.md). So the
pass's big batches (FRESH_DOCS or more) go to `search_fresh`, a table without a full-text index,
and each block of 4,096 positions of a tape they fill gets a row in `search_chunk`: the block's
words, each once, under a GIN index of its own (a tenth of the pairs, or less: agents repeat
themselves). `refine` then moves the docs into `search_doc` a block at a time, newest first, behind
the pass, when the indexer has nothing else to do.

A fresh doc is found exactly meanwhile: the blocks whose words hold every word of the query, newest
first; in them, the docs whose words do (read again here from the stored text, as the pass made
them); and those matched and ranked by the server as search_doc's would be (`found`). Search is
slower on fresh docs, never different. A doc is in one table at a time: each write removes the
other table's copies of its id range, and `refine` moves a block in one transaction.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from . import slices, windows, writes
from .docs import COLUMNS, Found, Where, fetch
from .text import MARK, pg_body, pg_query, pg_words, terms

BLOCK = 12  # a chunk row covers at most one block of 1 << BLOCK positions of a tape
FRESH_DOCS = settings.TAPEVIEW_SEARCH_FRESH_DOCS  # a batch of at least this many docs is made fresh
ANALYZE_AFTER = 100_000  # docs moved after which the statistics are renewed (as search.catchup)
T = TypeVar("T")
_FIELDS = ", ".join(f"f.{c}" for c in COLUMNS.split(", "))

INSERT = (
    f"WITH texts AS MATERIALIZED (SELECT n, body FROM unnest(%s::text[]) WITH ORDINALITY AS t(body, n)), "
    f"{writes.PG_ROWS}, "
    f"put AS (INSERT INTO search_fresh (id, body, tags, {COLUMNS}) "
    f"SELECT id, body, tags, {COLUMNS} FROM docs JOIN texts USING (n) JOIN labels USING (label)) "
    "INSERT INTO search_chunk (low, high, docs, words) "
    "SELECT low, high, docs, to_tsvector('simple', words) || array_to_tsvector(string_to_array(tags, ' ')) "
    "FROM unnest(%s::bigint[], %s::bigint[], %s::integer[], %s::text[], %s::text[]) "
    "AS c(low, high, docs, words, tags)"
)
# Room for a batch: its ids made before, fresh or indexed, go first (a plain INSERT costs the server
# 0.96-1.14 s of the real tape's pass; with ON CONFLICT, 1.37-1.74 s).
ROOM = (
    "WITH fresh AS (DELETE FROM search_fresh WHERE id BETWEEN %s AND %s) "
    "DELETE FROM search_doc WHERE id BETWEEN %s AND %s"
)
# A block's docs whose words hold the query's, matched (the query and its tags) and ranked (the query
# alone, as backends._scored) as search_doc's tsv would be.
MATCHED = (
    "WITH texts AS MATERIALIZED (SELECT n, to_tsvector('simple', w) AS v "
    "FROM unnest(%s::text[]) WITH ORDINALITY AS t(w, n)), "
    "docs AS (SELECT * FROM unnest(%s::bigint[], %s::bigint[]) AS d(id, n)) "
    f"SELECT f.id, {_FIELDS}, ts_rank(m.v, to_tsquery('simple', %s), 1) FROM docs JOIN texts USING (n) "
    "JOIN search_fresh f USING (id), "
    "LATERAL (SELECT texts.v || array_to_tsvector(string_to_array(f.tags, ' ')) AS v) AS m "
    "WHERE m.v @@ to_tsquery('simple', %s) ORDER BY f.id DESC LIMIT %s"
)


def made(rows: list[tuple]) -> bool:
    """Whether a batch of rows (as PostgreSQL.row makes them) is made fresh."""
    return len(rows) >= FRESH_DOCS


def params(rows: list[tuple]) -> list:
    """INSERT's parameters for rows as PostgreSQL.row makes them: their docs, and their blocks' words."""
    parts = writes.pg_parts(rows)
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    keys = ids >> BLOCK
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    lows, highs = np.minimum.reduceat(ids[order], starts), np.maximum.reduceat(ids[order], starts)
    # Each block's distinct texts and labels (a few), then their words, each text split once.
    held: dict[int, set[int]] = {}
    for key, n in set(zip(keys.tolist(), parts.text_of, strict=True)):
        held.setdefault(key, set()).add(n)
    tagged: dict[int, set[str]] = {}
    for key, tags in set(zip(keys.tolist(), [row[2][0] for row in rows], strict=True)):
        tagged.setdefault(key, set()).update(tags.split())
    split = [pg_words(text).split() for text in parts.texts]
    words = []
    for key in ordered[starts].tolist():
        union: set[str] = set()
        for n in held[key]:
            union.update(split[n - 1])
        words.append(" ".join(union))
    tags = [" ".join(tagged[key]) for key in ordered[starts].tolist()]
    return [
        [pg_body(t) for t in parts.texts],
        *parts.labels,
        *parts.docs,
        lows.tolist(),
        highs.tolist(),
        np.diff(np.r_[starts, len(rows)]).tolist(),
        words,
        tags,
    ]


def write(params: list, meanwhile: Callable[[], T] | None = None) -> T | None:
    """A batch (INSERT's `params`) in, after its room is made (see writes.pg_insert for `meanwhile`)."""
    low, high = min(params[-5]), max(params[-4])  # its blocks' lowest and highest ids
    with connection.cursor() as cursor:
        cursor.execute(ROOM, [low, high, low, high])
    return writes.pg_insert(params, meanwhile, sql=INSERT)


def pending() -> bool:
    """Whether any doc is fresh."""
    return bool(fetch("SELECT EXISTS (SELECT 1 FROM search_chunk)", [])[0][0])


def waiting() -> int:
    """How many docs are fresh (counted as made: a reset's deletes may leave fewer)."""
    return int(fetch("SELECT COALESCE(SUM(docs), 0) FROM search_chunk", [])[0][0])


def coarse(q: str, where: Where) -> str:
    """The tsquery a block's words must match: every word of the query, a phrase's words anywhere."""
    parts = []
    for term in terms(q):
        quoted = [f"'{w}'" for w in term.words]
        if term.prefix:
            quoted[-1] += ":*"
        parts += quoted
    parts += ["(" + " | ".join(alternatives) + ")" for alternatives in where.tags]
    return " & ".join(parts)


def found(q: str, query: str, where: Where, wanted: int) -> list[Found]:
    """The newest `wanted` fresh docs that match `query` (the tsquery of `q` and `where`'s tags) within
    `where`, scored as search_doc's are."""
    hits: list[Found] = []
    for low, high in _blocks(q, where):
        hits += _matched(q, query, where.narrowed(low, high), wanted - len(hits))
        if len(hits) >= wanted:
            break
    return hits[:wanted]


def _blocks(q: str, where: Where) -> Iterator[tuple[int, int]]:
    """The id ranges of the blocks whose words hold the query's, newest first, overlaps merged."""
    listed = fetch(
        "SELECT low, high FROM search_chunk WHERE words @@ to_tsquery('simple', %s) "
        "AND high >= %s AND low <= %s ORDER BY high DESC",
        [coarse(q, where), where.first, where.last],
    )
    run: list[int] | None = None
    for low, high in listed:
        if run is not None and high >= run[0]:
            run[0] = min(run[0], low)
            continue
        if run is not None:
            yield run[0], run[1]
        run = [low, high]
    if run is not None:
        yield run[0], run[1]


def _matched(q: str, query: str, where: Where, wanted: int) -> list[Found]:
    """The newest `wanted` fresh docs of one range that match: those whose words and tags may (read
    here), matched and scored by the server."""
    within, bounds = where.ids_sql("id")
    tapes, tape_ids = where.tapes_sql("id", placeholders=False, redundant=False)
    rows = fetch(
        f"SELECT id, body, tags FROM search_fresh WHERE {within} AND {tapes} AND {where.sql} "
        "ORDER BY id DESC",
        [*bounds, *tape_ids, *where.params],
    )
    needed = [term for term in terms(q)]
    texts: dict[str, int] = {}
    words_of: dict[str, str | None] = {}
    ids, ns = [], []
    for doc_id, body, tags in rows:
        if where.tags and not all(set(tags.split()) & set(alternatives) for alternatives in where.tags):
            continue
        if body not in words_of:
            text = pg_words(body.replace(MARK, ""))
            words_of[body] = text if _may_hold(set(text.split()), needed) else None
        text = words_of[body]
        if text is None:
            continue
        ids.append(doc_id)
        ns.append(texts.setdefault(text, len(texts) + 1))
    if not ids:
        return []
    return [Found(*row) for row in fetch(MATCHED, [list(texts), ids, ns, pg_query(q), query, wanted])]


def _may_hold(held: set[str], needed: list) -> bool:
    """Whether a doc's words hold every word of the query (a prefix: the start of one)."""
    for term in needed:
        *whole, last = term.words
        if any(w not in held for w in whole):
            return False
        if term.prefix:
            if not any(w.startswith(last) for w in held):
                return False
        elif last not in held:
            return False
    return True


def delete(first: int, last: int) -> None:
    """The fresh docs of an id range, and the blocks it holds whole (a block it cuts keeps its words: a
    block's words may hold more than its docs', never less)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM search_fresh WHERE id BETWEEN %s AND %s", [first, last])
        cursor.execute("DELETE FROM search_chunk WHERE low >= %s AND high <= %s", [first, last])


_moved = 0


def refine(deadline: float | None = None, blocks: int | None = None) -> int:
    """Move fresh docs into search_doc, a block at a time, newest first, until none is left,
    `deadline` (time.monotonic) has passed or `blocks` are moved. Returns how many docs were moved."""
    global _moved
    moved = 0
    for _ in itertools.repeat(None) if blocks is None else range(blocks):
        if deadline is not None and time.monotonic() >= deadline:
            break
        with transaction.atomic():
            block = fetch(
                "SELECT id, low, high FROM search_chunk ORDER BY high DESC LIMIT 1 FOR UPDATE SKIP LOCKED", []
            )
            if not block:
                break
            chunk, low, high = block[0]
            rows = fetch(
                f"DELETE FROM search_fresh WHERE id BETWEEN %s AND %s RETURNING id, body, tags, {COLUMNS}",
                [low, high],
            )
            with connection.cursor() as cursor:
                cursor.execute("DELETE FROM search_chunk WHERE id = %s", [chunk])
            if rows:
                docs = [
                    (
                        doc_id,
                        body.replace(MARK, ""),
                        (tags, doc, tape, store, item, source, kind, name),
                        pos,
                        date,
                    )
                    for doc_id, body, tags, doc, tape, pos, store, item, source, kind, name, date in rows
                ]
                slices.made(row[0] for row in docs)
                writes.pg_insert(writes.pg_params(docs))
        moved += len(rows)
    _moved += moved
    if _moved >= ANALYZE_AFTER or (_moved and not pending()):
        _moved = 0
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE search_doc")
        windows.forget()
    return moved
