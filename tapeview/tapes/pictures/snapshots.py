"""A snapshot of a tape's rows (rows.Snapshot) whose chunk summaries are kept across appends."""

from __future__ import annotations

import orjson
from django.core.cache import cache
from django.db.models import QuerySet

from .. import rows
from ..models import EntryChunk, Tape
from .tallies import prefix_key

CHUNKS_SECONDS = 600


def snapshot(tape: Tape) -> rows.Rows:
    """rows.snapshot, with the summaries of the tape's chunks before its last kept across appends,
    until a reset: the indexer grows only the last chunk (in place) and adds new ones after it, so
    a chunk before the last is full and stays as it is until a reset deletes every chunk (whose ids
    are never used again). Only the summaries from the last one kept on are read: a few rows."""
    key = prefix_key("chunk-summaries", tape, None)
    kept = cache.get(key) or []
    chunks = EntryChunk.objects.filter(tape=tape).order_by("first_pos")
    since = chunks.filter(first_pos__gte=kept[-1].first_pos) if kept else chunks
    found = _summaries(since)
    # The chunk kept last is there as it was (the same index, the same rows), or nothing kept holds.
    if kept and (not found or (found[0].id, found[0].last_pos) != (kept[-1].id, kept[-1].last_pos)):
        kept, found = [], _summaries(chunks)
    summaries = kept[:-1] + found if kept else found
    if len(summaries) > len(kept) + 1:
        cache.set(key, summaries[:-1], CHUNKS_SECONDS)
    return rows.Snapshot(tape, seen=(summaries, {}))


def _summaries(chunks: QuerySet[EntryChunk]) -> list:
    # rows.Snapshot's own reading of them (its summaries, given as `seen`, are read no more).
    return [
        rows.Summary(pk, first, last, orjson.loads(tally))
        for pk, first, last, tally in chunks.values_list(*rows.SUMMARY)
    ]
