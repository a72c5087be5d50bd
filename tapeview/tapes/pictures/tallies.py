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
from ..models import Anchor, EntryChunk, Tape
from ..packing import ANCHOR, CHUNK, ERROR, NO_DATE, micros
from ..rows import Match

SPARK_BUCKETS = 40
STRIP_BUCKETS = 200
PHASE_BARS = 60
# The aggregates of a tape change only when its rows do; the session list draws fifty at a time.
CACHE_SECONDS = 600
MARKS = ("anchor", "error", "call")
ANCHOR_MARK, ERROR_MARK, CALL_MARK = (MARKS.index(w) for w in ("anchor", "error", "call"))
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


def generation_of(tape: Tape, index: rows.Rows | None) -> int | None:
    """generation(tape) as `index`, the page's snapshot of the tape's rows, read it: the first of its
    chunk summaries, read at once with the others (no query of its own, and the very index its
    answers come from); asked of the database for any other selection."""
    summaries = index.seen[0] if is_snapshot(index) else None
    return summaries[0].id if summaries else generation(tape)


def is_snapshot(index: rows.Rows | None) -> bool:
    """Whether `index` is a snapshot (rows.Snapshot) whose summaries are read: what is worked out
    from it is of the generation it read, and kept by that one (a reset after it was read lets
    everything kept by it go), without asking the generation again after."""
    return isinstance(index, rows.Snapshot) and bool(index.seen[0])


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


def marks(tape: Tape, buckets: int = STRIP_BUCKETS, index: rows.Rows | None = None) -> Marks:
    """Where the anchors, errors and tool calls fall, in at most `buckets` buckets of positions
    (one per position on a shorter tape). Counted from the marked rows kept (_marked), at once:
    the strip drawn from them is what is kept until the tape changes, not these hundreds of marks
    (pickled and read back at every draw, they cost more than counting them again). Asked of `index`
    (the page's snapshot of the tape's rows) when given: after an append, the chunk it opened."""
    return _marks(tape, buckets, index)


def _marks(tape: Tape, buckets: int, index: rows.Rows | None) -> Marks:
    positions = max(tape.next_pos - 1, 0)
    buckets = min(buckets, positions)
    if buckets == 0:
        return Marks((), 0, 0)
    kinds, names = _marked(tape, index)
    # The least name of a group, as min() of the names would say: by each name's rank among them.
    ranked = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[ranked] = np.arange(len(ranked))
    # Where each bucket's positions start (_position_bucket's inverse): bucket k holds the positions
    # p with (p - 1) * buckets // positions == k; one past the last bucket counts in the last.
    k = np.arange(1, buckets, dtype=np.int64)
    edges = (k * positions + buckets - 1) // buckets + 1
    found = []
    for w, (pos, name) in zip(MARKS, kinds, strict=True):
        if not len(pos):
            continue
        # In file order, so each bucket's rows of one kind of mark are a run of their own.
        starts = np.r_[0, np.searchsorted(pos, edges)]
        ends = np.r_[starts[1:], len(pos)]
        full = np.flatnonzero(ends > starts)
        starts, ends = starts[full], ends[full]
        runs = zip(
            full.tolist(),
            (ends - starts).tolist(),
            pos[starts].tolist(),
            pos[ends - 1].tolist(),
            np.minimum.reduceat(rank[name], starts).tolist(),
            strict=True,
        )
        found += [Mark(w, b, n, first, last, names[ranked[least]]) for b, n, first, last, least in runs]
    return Marks(tuple(found), buckets, positions)


# Per kind of mark (as MARKS), the positions of its rows in file order and their names (indices
# of the names); the names.
Marked = tuple[tuple[tuple[np.ndarray, np.ndarray], ...], list[str]]


def _marked(tape: Tape, index: rows.Rows | None) -> Marked:
    """Every anchor, error and tool call of the tape: its position and its name, by what it is.
    Those of the full chunks are kept across appends, until a reset (the indexer grows only the
    last chunk, and never changes a full one): after an append only the chunks past them are read,
    not a million rows again, and what is kept is written again only when another chunk is full.

    Without a snapshot of the index, the first reading (one query) keeps them without knowing the
    index's generation; the next one learns it (reading them all again) and from then on reads only
    what was appended. With one, its generation is known from the start (generation_of)."""
    none = (np.zeros(0, np.int64), np.zeros(0, np.int32))
    empty: Marked = ((none,) * len(MARKS), [])
    key = prefix_key("marked-held", tape, None)  # not "marked-full": that kept no nanobot anchors
    kept = cache.get(key)
    snapshotted = is_snapshot(index)
    if kept is None and not snapshotted:
        through, full, found = _read_marked(tape, index, 0, empty)
        cache.set(key, (None, through, full), CACHE_SECONDS)
        return found
    gen = generation_of(tape, index)
    if gen is None:
        return empty
    if kept is None or kept[0] != gen:  # not learnt yet, or reset since
        kept = (gen, 0, empty)
    through, full, found = _read_marked(tape, index, kept[1], kept[2])
    # No reset while they were read: a snapshot's rows are of its generation (else asked again).
    if (gen, through) != kept[:2] and (snapshotted or generation(tape) == gen):
        cache.set(key, (gen, through, full), CACHE_SECONDS)
    return found


def _read_marked(
    tape: Tape, index: rows.Rows | None, through: int, kept: Marked
) -> tuple[int, Marked, Marked]:
    """The marked rows past `through` added to those `kept` (of full chunks): through where the
    full chunks read end, the marked rows of the full chunks, and all of them."""
    kinds, names = kept
    codes = {n: i for i, n in enumerate(names)}
    full, rest = [[pair] for pair in kinds], [[] for _ in MARKS]
    # An anchor that stays what it is (nanobot's, a message: formats/nanobot.md §2.5) is named by
    # the Anchor table, not by its row (a role); Bub's are lines of their own, named on their row.
    held = {}
    if tape.kind != "bub":
        held = dict(Anchor.objects.filter(tape=tape, pos__gt=through).values_list("pos", "name"))
    marked = (index or rows.of(tape)).starting(through + 1)
    marked = marked.any_of(Match(errors=True), Match(anchored=True), Match(kinds=("tool_call",)))
    for chunk, picked in marked.chunks():
        c = chunk.columns
        pos, flag = c["pos"][picked].astype(np.int64), c["flags"][picked]
        anchor = (flag & ANCHOR) != 0
        what = np.where((flag & ERROR) != 0, ERROR_MARK, np.where(anchor, ANCHOR_MARK, CALL_MARK))
        mapping = np.array([codes.setdefault(n, len(codes)) for n in chunk.names], dtype=np.int32)
        name = mapping[c["name"][picked]]
        other = anchor & (c["kind"][picked] != _code(chunk.kinds, "anchor"))
        name[other] = [codes.setdefault(held.get(p, ""), len(codes)) for p in pos[other].tolist()]
        closed = chunk.count >= CHUNK  # a full chunk stays as it is: an append only adds chunks
        for code, part in enumerate(full if closed else rest):
            mine = what == code
            part.append((pos[mine], name[mine]))
        if closed:
            through = max(through, int(c["pos"][-1]))
    names = sorted(codes, key=codes.__getitem__)
    kept = (tuple(_joined(part) for part in full), names) if len(full[0]) > 1 else (kinds, names)
    if not rest[0]:
        return through, kept, kept
    return through, kept, (tuple(_joined([k, *r]) for k, r in zip(kept[0], rest, strict=True)), names)


def _code(words: list[str], word: str) -> int:
    """The code of `word` in a chunk's kinds or names; -1 (no entry's) where it has none."""
    return words.index(word) if word in words else -1


def _joined(part: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    if len(part) == 1:
        return part[0]
    return np.concatenate([p for p, _ in part]), np.concatenate([n for _, n in part])
