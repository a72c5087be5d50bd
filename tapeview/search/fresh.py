"""PostgreSQL's fresh docs: searchable before the GIN index holds them.

The GIN index holds each word of each doc: for the real 200,000-entry tape, 10 million (word, doc)
pairs, which cost the server three times the search pass's budget (docs/performance.md). So the
pass's big batches (FRESH_DOCS or more) go to `search_fresh`, a table without a full-text index,
and each block of 4,096 positions of a tape they fill gets a row in `search_chunk`: the block's
words, each once, under a GIN index of its own (a tenth of the pairs, or less: agents repeat
themselves). `refine` then moves the docs into `search_doc` a block at a time, in id order, behind
the pass, when the indexer has nothing else to do.

A fresh doc is found exactly meanwhile (search.fresh_search): the blocks whose words hold every word
of the query, then the docs whose kept words do, matched and ranked by the server as search_doc's
would be. Search is slower on fresh docs, never different. A doc is in one table at a time: each
write removes the other table's copies of its id range (a batch is one tape's docs, or one memory
store's), and `refine` moves a block in one transaction. Memory stores are written to search_doc
directly (pg_writes.insert): the search pass alone makes fresh docs.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from django.conf import settings
from django.db import connection, transaction

from . import pg_rows, slices
from .docs import COLUMNS, fetch
from .text import pg_body, pg_words

BLOCK = 12  # a chunk row covers at most one block of 1 << BLOCK positions of a tape
CHUNK_BYTES = 600_000  # ...and words of a tsvector of at most about this size (PostgreSQL's bound: 1 MB)
FRESH_DOCS = settings.TAPEVIEW_SEARCH_FRESH_DOCS  # a batch of at least this many docs is made fresh
T = TypeVar("T")
FIELDS = ", ".join(f"f.{c}" for c in COLUMNS.split(", "))

INSERT = (
    "WITH texts AS MATERIALIZED (SELECT n, body, words "
    "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(body, words, n)), "
    f"{pg_rows.PG_ROWS}, "
    f"put AS (INSERT INTO search_fresh (id, body, words, tags, {COLUMNS}) "
    f"SELECT id, body, words, tags, {COLUMNS} FROM docs JOIN texts USING (n) JOIN labels USING (label)) "
    "INSERT INTO search_chunk (low, high, docs, words) "
    "SELECT low, high, docs, to_tsvector('simple', words) || array_to_tsvector(string_to_array(tags, ' ')) "
    "FROM unnest(%s::bigint[], %s::bigint[], %s::integer[], %s::text[], %s::text[]) "
    "AS c(low, high, docs, words, tags)"
)
# Room for a batch: its ids made before, fresh or indexed, go first (a plain INSERT costs the server
# 0.96-1.14 s of the real tape's pass; with ON CONFLICT, 1.37-1.74 s).
ROOM = (
    "WITH fresh AS (DELETE FROM search_fresh WHERE id BETWEEN %s AND %s), "
    "blocks AS (DELETE FROM search_chunk WHERE low >= %s AND high <= %s) "
    "DELETE FROM search_doc WHERE id BETWEEN %s AND %s"
)
# A range's blocks locked first, as `refine` locks its block before its docs: a write that meets a
# block being moved waits for it, then sees its docs where they went.
LOCK = "SELECT id FROM search_chunk WHERE high >= %s AND low <= %s ORDER BY id FOR UPDATE"
# A doc's tsvector as search_doc's would be: its words and its tags.
TSV = "to_tsvector('simple', f.words) || array_to_tsvector(string_to_array(f.tags, ' '))"


# A block's fresh docs moved into search_doc, in one statement (the server makes each tsvector).
MOVE = (
    "WITH f AS (DELETE FROM search_fresh WHERE id BETWEEN %s AND %s RETURNING *) "
    f"INSERT INTO search_doc (id, body, {COLUMNS}, tsv) SELECT f.id, f.body, {FIELDS}, {TSV} FROM f "
    # Never met as the docs are written (a doc is in one table at a time): a move can be repeated.
    "ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in ("body", *COLUMNS.split(", "), "tsv"))
)


def made(rows: list[tuple]) -> bool:
    """Whether a batch of rows (as PostgreSQL.row makes them) is made fresh."""
    return len(rows) >= FRESH_DOCS


def params(rows: list[tuple]) -> list:
    """INSERT's parameters for rows as PostgreSQL.row makes them: their docs, and their blocks' words."""
    parts = pg_rows.pg_parts(rows)
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    keys = ids >> BLOCK
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    said = [pg_words(text) for text in parts.texts]
    split = [words.split() for words in said]
    tags = [row[2][0] for row in rows]
    chunks: list[tuple] = []
    for start, end in zip(starts.tolist(), [*starts[1:].tolist(), len(rows)], strict=True):
        members = order[start:end].tolist()
        chunks += _chunks(members, ids, parts.text_of, split, tags)
    return [
        [pg_body(t) for t in parts.texts],
        [f" {words} " for words in said],  # spaced: a word is found as " word " (see fresh_search._likely)
        *parts.labels,
        *parts.docs,
        *(list(column) for column in zip(*chunks, strict=True)),
    ]


def _chunks(members: list[int], ids: np.ndarray, text_of: list[int], split: list[list[str]], tags: list[str]):
    """The chunk rows of one block's docs (`members`, their rows' indices): one, holding each of their
    distinct words once, or where that would pass PostgreSQL's bound on a tsvector (1 MB), several,
    each over a run of their ids."""
    union: set[str] = set()
    for n in {text_of[i] for i in members}:
        union.update(split[n - 1])
    if _size(union) <= CHUNK_BYTES:
        return [_chunk(members, ids, union, tags)]
    made, run, union, size = [], [], set(), 0
    for i in sorted(members, key=lambda i: ids[i]):
        new = set(split[text_of[i] - 1]) - union
        if run and size + _size(new) > CHUNK_BYTES:
            made.append(_chunk(run, ids, union, tags))
            run, union, size = [], set(), 0
            new = set(split[text_of[i] - 1])
        run.append(i)
        union |= new
        size += _size(new)
    return [*made, _chunk(run, ids, union, tags)]


def _size(words: set[str]) -> int:
    """About the bytes of a tsvector of these words (each: its bytes, an entry and a position)."""
    return sum(len(word.encode()) for word in words) + 8 * len(words)


def _chunk(members: list[int], ids: np.ndarray, union: set[str], tags: list[str]) -> tuple:
    """A chunk row: its lowest and highest id, its docs, its words and its tags."""
    held = ids[members]
    tagged = {tag for i in members for tag in tags[i].split()}
    return int(held.min()), int(held.max()), len(members), " ".join(union), " ".join(tagged)


def write(params: list, meanwhile: Callable[[], T] | None = None) -> T | None:
    """A batch (INSERT's `params`) in, after its room is made (see pg_rows.pg_insert for `meanwhile`)."""
    low, high = min(params[-5]), max(params[-4])  # its blocks' lowest and highest ids
    with connection.cursor() as cursor:
        cursor.execute(LOCK, [low, high])
        cursor.execute(ROOM, [low, high] * 3)
    return pg_rows.pg_insert(params, meanwhile, sql=INSERT)


def pending() -> bool:
    """Whether any doc is fresh."""
    return bool(fetch("SELECT EXISTS (SELECT 1 FROM search_chunk)", [])[0][0])


def waiting() -> int:
    """How many docs are fresh (counted as made: a reset's deletes may leave fewer)."""
    return int(fetch("SELECT COALESCE(SUM(docs), 0) FROM search_chunk", [])[0][0])


def delete(first: int, last: int) -> None:
    """The fresh docs of an id range, and the blocks it holds whole (a block it cuts keeps its words: a
    block's words may hold more than its docs', never less)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(LOCK, [first, last])
        cursor.execute("DELETE FROM search_fresh WHERE id BETWEEN %s AND %s", [first, last])
        cursor.execute("DELETE FROM search_chunk WHERE low >= %s AND high <= %s", [first, last])


def refine(deadline: float | None = None, blocks: int | None = None) -> int:
    """Move fresh docs into search_doc, a block at a time, the lowest ids first (search_doc's rows then
    lie in id order, as the pass writes them and search walks them), until none is left, `deadline`
    (time.monotonic) has passed or `blocks` are moved. Returns how many docs were moved."""
    moved = 0
    for _ in itertools.repeat(None) if blocks is None else range(blocks):
        if deadline is not None and time.monotonic() >= deadline:
            break
        with transaction.atomic():
            block = fetch(
                "SELECT id, low, high FROM search_chunk ORDER BY low LIMIT 1 FOR UPDATE SKIP LOCKED", []
            )
            if not block:
                break
            chunk, low, high = block[0]
            with connection.cursor() as cursor:
                cursor.execute(MOVE, [low, high])
                moved += max(cursor.rowcount, 0)
                cursor.execute("DELETE FROM search_chunk WHERE id = %s", [chunk])
            slices.made([low, high])
    return moved
