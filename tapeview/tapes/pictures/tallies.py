"""The numbers behind a tape's pictures, each counted over the packed index in a fixed number of
buckets: a tape of a million entries costs array arithmetic over its chunks and a few hundred
numbers, never a row per entry. Kept in the cache until the tape's index changes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache

from .. import rows
from ..models import Tape
from ..packing import ERROR, NO_DATE, micros
from ..rows import Match

SPARK_BUCKETS = 40
STRIP_BUCKETS = 200
PHASE_BARS = 60
# The aggregates of a tape change only when its rows do; the session list draws fifty at a time.
CACHE_SECONDS = 600
MARKS = ("anchor", "error", "call")
MARK_WORDS = {
    "anchor": ("anchor", "anchors"),
    "error": ("error", "errors"),
    "call": ("tool call", "tool calls"),
}


@dataclass(frozen=True)
class Activity:
    """Entries per bucket over a tape's life (`by` "time"), or along its positions ("position")."""

    counts: tuple[int, ...]
    by: str
    span_s: float  # first to last entry's date; 0 by position


@dataclass(frozen=True)
class Mark:
    """The anchors, errors or tool calls of one bucket of positions."""

    what: str  # anchor | error | call
    bucket: int
    count: int
    first_pos: int
    last_pos: int
    name: str  # the anchor's name when the bucket holds one anchor


@dataclass(frozen=True)
class Marks:
    marks: tuple[Mark, ...]
    buckets: int
    positions: int  # the tape's lines: entries and unreadable ones


def state_key(kind: str, tape: Tape, also: tuple = ()) -> str:
    """A cache key for something about this tape that holds until the tape's index changes (it
    grows, or is reset: another file, size or mtime); `also` is whatever else it depends on (a
    setting, a field of the tape the indexer keeps)."""
    state = (tape.key, tape.path, tape.next_pos, tape.indexed_offset, tape.size, tape.mtime_ns, also)
    # Hashed: `also` may hold any text (a model's name), and a cache key must stay short and plain.
    digest = hashlib.blake2b(repr(state).encode(), digest_size=16).hexdigest()
    return f"tapeview:pictures:{kind}:{tape.pk}:{digest}"


def cached(kind: str, tape: Tape, compute, also: tuple = ()):
    """What `compute` gives for this tape, kept until the tape's index changes (see state_key)."""
    key = state_key(kind, tape, also)
    found = cache.get(key)
    if found is None:
        found = compute()
        cache.set(key, found, CACHE_SECONDS)
    return found


def activity(tape: Tape, buckets: int = SPARK_BUCKETS) -> Activity:
    """Entries per time bucket from the first entry's date to the last's; by position when the
    tape's dates are unknown (or all the same). One aggregate query, at most `buckets` rows."""
    return cached(f"activity{buckets}", tape, lambda: _activity(tape, buckets))


def _activity(tape: Tape, buckets: int) -> Activity:
    if tape.first_at is not None and tape.last_at is not None and tape.last_at > tape.first_at:
        span = (tape.last_at - tape.first_at).total_seconds()
        first, scale = micros(tape.first_at), buckets / (span * 1e6)
        counts = np.zeros(buckets, dtype=np.int64)
        for chunk, picked in rows.of(tape).chunks():
            dates = chunk.columns["date"][picked]
            dates = dates[dates != NO_DATE]
            counts += _bucketed(((dates - first) * scale).astype(np.int64), buckets)
        return Activity(tuple(counts.tolist()), "time", span)
    positions = max(tape.next_pos - 1, 0)
    buckets = min(buckets, positions)  # a short tape: a bar per entry
    if not buckets:
        return Activity((), "position", 0.0)
    counts = np.zeros(buckets, dtype=np.int64)
    for chunk, picked in rows.of(tape).chunks():
        counts += _bucketed(_position_bucket(chunk.columns["pos"][picked], positions, buckets), buckets)
    return Activity(tuple(counts.tolist()), "position", 0.0)


def _position_bucket(pos: np.ndarray, positions: int, buckets: int) -> np.ndarray:
    return (pos.astype(np.int64) - 1) * buckets // positions


def _bucketed(b: np.ndarray, buckets: int) -> np.ndarray:
    """Entries per bucket; one indexed since the tape was read, or dated past its last entry's
    date, counts in the last bucket."""
    return np.bincount(np.clip(b, 0, buckets - 1), minlength=buckets)


def marks(tape: Tape, buckets: int = STRIP_BUCKETS) -> Marks:
    """Where the anchors, errors and tool calls fall, in at most `buckets` buckets of positions
    (one per position on a shorter tape). One aggregate query, at most 3 * buckets rows."""
    return cached(f"marks{buckets}", tape, lambda: _marks(tape, buckets))


def _marks(tape: Tape, buckets: int) -> Marks:
    positions = max(tape.next_pos - 1, 0)
    buckets = min(buckets, positions)
    if buckets == 0:
        return Marks((), 0, 0)
    groups: dict[tuple[str, int], list] = {}  # (what, bucket) -> [count, first, last, least name]
    marked = rows.of(tape).any_of(Match(errors=True), Match(kinds=("anchor", "tool_call")))
    for chunk, picked in marked.chunks():
        c = chunk.columns
        kinds = np.array(chunk.kinds, dtype=object)[c["kind"][picked]]
        names = np.array(chunk.names, dtype=object)[c["name"][picked]]
        errors = (c["flags"][picked] & ERROR) != 0
        what = np.where(errors, "error", np.where(kinds == "anchor", "anchor", "call"))
        bucket = np.clip(_position_bucket(c["pos"][picked], positions, buckets), 0, buckets - 1)
        for w, b, pos, name in zip(
            what.tolist(), bucket.tolist(), c["pos"][picked].tolist(), names, strict=True
        ):
            group = groups.setdefault((w, b), [0, pos, pos, name])
            group[0] += 1
            group[2] = pos
            group[3] = min(group[3], name)
    found = [Mark(w, b, n, first, last, name or "") for (w, b), (n, first, last, name) in groups.items()]
    found.sort(key=lambda m: (MARKS.index(m.what), m.bucket))
    return Marks(tuple(found), buckets, positions)
