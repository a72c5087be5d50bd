"""The numbers behind a tape's pictures, each counted over the packed index in a fixed number of
buckets: a tape of a million entries costs array arithmetic over its chunks and a few hundred
numbers, never a row per entry. Kept in the cache until the tape's index changes; what an append
leaves alone (the marks of the rows indexed before) is kept across appends, until a reset."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache

from .. import rows
from ..models import EntryChunk, Tape
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


def generation(tape: Tape) -> int | None:
    """Which index of the tape this is: the id of its first chunk. A reset deletes every chunk and
    ids are never used twice (AUTOINCREMENT, sequences), so it changes with every reset or
    replacement of the file, never with an append (the indexer grows the last chunk, or adds one)."""
    return EntryChunk.objects.filter(tape=tape).order_by("first_pos").values_list("pk", flat=True).first()


def prefix_key(kind: str, tape: Tape, gen: int | None, also: tuple = ()) -> str:
    """A cache key for something of this tape that depends only on rows indexed already (rows
    before a position, an entry's card): it holds across appends, and a reset (another `gen`) or
    another file at the path (`tape.path`, device, inode) lets it go."""
    state = (tape.key, tape.path, tape.device, tape.inode, tape.kind, gen, also)
    digest = hashlib.blake2b(repr(state).encode(), digest_size=16).hexdigest()
    return f"tapeview:pictures:{kind}:{tape.pk}:{digest}"


def prefix_cached(kind: str, tape: Tape, compute, also: tuple = (), gen: int | None = None):
    """What `compute` gives from the rows of this tape indexed already (never from where it ends):
    kept across appends, until the tape is reset (see generation). `gen`: the generation of the
    snapshot of the index `compute` reads (else asked, and asked again after: a reset meanwhile
    keeps nothing)."""
    asked = gen is None
    gen = generation(tape) if asked else gen
    if gen is None:
        return compute()
    key = prefix_key(kind, tape, gen, also)
    found = cache.get(key)
    if found is None:
        found = compute()
        if not asked or generation(tape) == gen:
            cache.set(key, found, CACHE_SECONDS)
    return found


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
    pos, what, name, names = _marked(tape)
    if not len(pos):
        return Marks((), buckets, positions)
    bucket = np.clip(_position_bucket(pos, positions, buckets), 0, buckets - 1)
    # The least name of a group, as min() of the names would say: by each name's rank among them.
    ranked = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[ranked] = np.arange(len(ranked))
    found = []
    for code, w in enumerate(MARKS):
        # In file order, so each bucket's rows of one kind of mark are a run of their own.
        mine = what == code
        b, p, r = bucket[mine], pos[mine], rank[name[mine]]
        if not len(b):
            continue
        starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
        ends = np.r_[starts[1:], len(b)] - 1
        runs = zip(
            b[starts].tolist(),
            (ends - starts + 1).tolist(),
            p[starts].tolist(),
            p[ends].tolist(),
            np.minimum.reduceat(r, starts).tolist(),
            strict=True,
        )
        found += [Mark(w, k, n, first, last, names[ranked[least]]) for k, n, first, last, least in runs]
    return Marks(tuple(found), buckets, positions)


Marked = tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]  # pos, what (MARKS), name, the names


def _marked(tape: Tape) -> Marked:
    """Every anchor, error and tool call of the tape: its position, what it is (an index of MARKS),
    its name (an index of the names). The rows indexed before are kept across appends, until a
    reset: after an append only the chunks past them are read, not a million rows again.

    The first reading (one query) keeps them without knowing the index's generation; the next one
    learns it (reading them all again) and from then on reads only what was appended."""
    empty: Marked = (np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0, np.int32), [])
    key = prefix_key("marked", tape, None)
    kept = cache.get(key)
    if kept is None:
        through, found = _read_marked(tape, 0, empty)
        cache.set(key, (None, through, found), CACHE_SECONDS)
        return found
    gen = generation(tape)
    if gen is None:
        return empty
    if kept[0] != gen:  # not learnt yet, or reset since
        kept = (gen, 0, empty)
    through, found = _read_marked(tape, kept[1], kept[2])
    if (gen, through) != kept[:2] and generation(tape) == gen:  # no reset while they were read
        cache.set(key, (gen, through, found), CACHE_SECONDS)
    return found


def _read_marked(tape: Tape, through: int, kept: Marked) -> tuple[int, Marked]:
    """The marked rows past `through` added to those `kept`; through where they are read now."""
    pos, what, name, names = kept
    codes = {n: i for i, n in enumerate(names)}
    parts = [(pos, what, name)]
    marked = rows.of(tape).starting(through + 1)
    marked = marked.any_of(Match(errors=True), Match(kinds=("anchor", "tool_call")))
    for chunk, picked in marked.chunks():
        c = chunk.columns
        anchor = np.array([k == "anchor" for k in chunk.kinds], dtype=bool)[c["kind"][picked]]
        errors = (c["flags"][picked] & ERROR) != 0
        what_ = np.where(
            errors, MARKS.index("error"), np.where(anchor, MARKS.index("anchor"), MARKS.index("call"))
        )
        mapping = np.array([codes.setdefault(n, len(codes)) for n in chunk.names], dtype=np.int32)
        parts.append((c["pos"][picked].astype(np.int64), what_.astype(np.int8), mapping[c["name"][picked]]))
        # The rows up to the chunk's last stay as they are: an append only adds rows after them.
        through = max(through, int(c["pos"][-1]))
    if len(parts) == 1:
        return through, kept
    names = sorted(codes, key=codes.__getitem__)
    return through, (*(np.concatenate([p[i] for p in parts]) for i in range(3)), names)
