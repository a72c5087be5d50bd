"""Getting a batch of indexed entries into the database at the rate of parsing: packed into the
tape's chunks (tapes.packing), a few rows per thousands of entries, and the planner statistics
after a bulk load on PostgreSQL."""

from __future__ import annotations

import orjson
from django.db import connection

from .models import Anchor, EntryChunk, Tape
from .packing import CHUNK, Batch, Chunk, decode

# After indexing this many entries at once, PostgreSQL's planner statistics are refreshed
# (ANALYZE): a table grown from nothing by a bulk load otherwise plans every page as if empty.
ANALYZE_AFTER = 50_000


class Last:
    """The tape's last chunk row as the indexing run last wrote it (pk, entries): a run that owns
    the tape's lease is its only writer, so its next batch goes on from here without reading it back."""

    def __init__(self, pk: int | None, chunk: Chunk) -> None:
        self.pk, self.chunk = pk, chunk


def append(tape: Tape, batch: Batch, last: Last | None = None) -> Last | None:
    """Add a batch after the tape's last entry: the last chunk filled up first, then new ones.
    `last`: that chunk as the previous call returned it (None: read it from the database)."""
    if not len(batch):
        return last
    if last is None or last.pk is None:
        row = EntryChunk.objects.filter(tape=tape).order_by("-first_pos").first()
        last = None if row is None else Last(row.pk, decode(bytes(row.columns), row.vocab))
    growing = last is not None and last.chunk.count < CHUNK
    merged = (last.chunk if growing else Chunk()).extended(batch)
    chunks = [merged.sliced(at, at + CHUNK) for at in range(0, merged.count, CHUNK)]
    rows = [_row(tape, chunk) for chunk in chunks]
    if growing:
        # Updated in place, never deleted and made again: a page reading the tape meanwhile
        # finds the chunk where it started, with the new entries or without.
        grown = rows.pop(0)
        fields = ("last_pos", "count", "columns", "vocab", "tally")
        EntryChunk.objects.filter(pk=last.pk).update(**{f: getattr(grown, f) for f in fields})
        grown.pk = last.pk
        rows_made = [grown, *EntryChunk.objects.bulk_create(rows)]
    else:
        rows_made = EntryChunk.objects.bulk_create(rows)
    return Last(rows_made[-1].pk, chunks[-1])


def _row(tape: Tape, chunk: Chunk) -> EntryChunk:
    pos = chunk.columns["pos"]
    return EntryChunk(
        tape=tape,
        first_pos=int(pos[0]),
        last_pos=int(pos[-1]),
        count=chunk.count,
        columns=chunk.blob(),
        vocab=chunk.vocab(),
        tally=_json(chunk.tally()),
    )


def _json(value: dict) -> str:
    return orjson.dumps(value).decode()


def analyze() -> None:
    """Refresh PostgreSQL's statistics of the tables a bulk load grew (SQLite plans without them)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for model in (EntryChunk, Anchor, Tape):
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
