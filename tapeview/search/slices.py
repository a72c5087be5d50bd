"""PostgreSQL's GIN index in slices: partial GIN indexes beside the whole one, each over a range of
doc ids, so a common word's newest candidates are looked for in the newest slice first, at the cost
of that slice's matches alone (backends.PostgreSQL.find).

The whole GIN index costs about 0.25 µs for each match of a word anywhere in the table, and a
window's rows each cost a read, so a word in 3 % of 5.5 million docs took 50-100 ms to give its
newest 2,000 matches. In a slice of 75,000 docs it finds them among about 2,250 (docs/performance.md:
the p50 of 20 terms at scale 1 went from 76.5 to 44.7 ms). The price: the
slices' disk (about the whole index's again) and a second GIN insert for each doc in a slice.

A slice is an index named after its range, `search_doc_slice_<low>_<high>` (`_top` for the newest,
open upwards), so every process reads the ranges from the catalog. The newest slice is split when it
holds two slices' docs, and so is an older one that its tapes' appends grew as much (a doc's id is
its tape's and position's); older docs are sliced from the newest down. Each change is one transaction,
under an advisory lock: one process makes it, and a reader sees the slices before or after it. A
query names its slice's range, so it is right with any slices, or none, or a list read before a change.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from . import windows
from .docs import SHIFT, Found, Where, fetch

log = logging.getLogger("tapeview.search")

# Docs a slice holds when made (up to twice as many before a split).
SLICE = settings.TAPEVIEW_SEARCH_SLICE_DOCS
PREFIX = "search_doc_slice_"
NAME = re.compile(rf"{PREFIX}(\d+)_(\d+|top)")
LOCK = 0x7461_7065_7376  # the advisory lock of the process that changes the slices
LISTED_SECONDS = 60.0  # how long a process keeps the list of slices before it reads it again
KEEP_SECONDS = settings.TAPEVIEW_SEARCH_SLICE_SECONDS  # how often a pass with a budget looks for a change
LOCK_WAIT = "5s"  # how long a change waits for the table before it gives up


@dataclass(frozen=True)
class Slice:
    low: int
    high: int | None  # None: the newest slice, open upwards

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.low}_{'top' if self.high is None else self.high}"

    def sql(self, column: str = "id") -> str:
        """Its range as its index's predicate says it, so the planner can take the index."""
        upper = "" if self.high is None else f" AND {column} <= {self.high}"
        return f"{column} >= {self.low}{upper}"


_listed: dict[str, tuple[float, list[Slice]]] = {}
_kept = 0.0
# Tape -> the lowest and highest ids of its docs this process made, until the slices they are in are counted.
_made: dict[int, tuple[int, int]] = {}


def made(ids: Iterable[int]) -> None:
    """Docs the search pass writes: an older slice that holds one may have grown (see `_grown`)."""
    docs = [doc for doc in ids if doc > 0]  # a memory doc's id is negative: in no slice
    if not docs:
        return
    low, high = min(docs), max(docs)
    if low >> SHIFT != high >> SHIFT:  # not one tape's, as a batch of the pass is
        for _, of_tape in itertools.groupby(sorted(docs), key=lambda doc: doc >> SHIFT):
            made(list(of_tape))
        return
    was = _made.get(tape := low >> SHIFT, (low, high))
    _made[tape] = (min(was[0], low), max(was[1], high))


def listed() -> list[Slice]:
    """The slices there are, newest first (read again after LISTED_SECONDS, or a change here)."""
    key = connection.settings_dict["NAME"]
    now = time.monotonic()
    kept = _listed.get(key)
    if kept is None or now - kept[0] > LISTED_SECONDS:
        names = fetch(
            "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE i.indrelid = 'search_doc'::regclass AND i.indisvalid AND i.indpred IS NOT NULL "
            "AND c.relam = (SELECT oid FROM pg_am WHERE amname = 'gin') AND c.relname LIKE %s",
            [PREFIX.replace("_", "\\_") + "%"],
        )
        found = []
        for (name,) in names:
            if match := NAME.fullmatch(name):
                low, high = match.groups()
                found.append(Slice(int(low), None if high == "top" else int(high)))
        found.sort(key=lambda s: s.low, reverse=True)
        kept = _listed[key] = (now, found)
    return kept[1]


def pieces(first: int, last: int) -> list[tuple[int, int, Slice | None]]:
    """The id range from `first` to `last` cut by the slices, newest first: each piece's bounds and its
    slice, or None for a part no slice holds (the memory's docs, older docs not sliced yet). Empty
    where there are no slices."""
    found: list[tuple[int, int, Slice | None]] = []
    at = last  # the pieces so far hold the ids above `at`
    slices = listed()
    for s in slices:
        if at < first:
            break
        top = at if s.high is None else min(s.high, at)
        if top < s.low:
            continue  # above `at` (a list read half-way through a change)
        if top < at:  # a gap no slice holds
            found.append((max(top + 1, first), at, None))
        if top < first:
            at = first - 1
            break
        found.append((max(s.low, first), top, s))
        at = s.low - 1
    if slices and at >= first:
        found.append((first, at, None))
    return found


def candidates(
    where: Where,
    cut: list[tuple[int, int, Slice | None]],
    wanted: int,
    piece: Callable[[Where, int, Slice | None], list[Found]],
) -> list[Found]:
    """The newest `wanted` matches, scored, piece by piece of `cut` (see `pieces`) until there are
    as many: `piece` gives those of `where` narrowed to a piece's ids, as many as are still wanted,
    from its slice's index (the slice's range named as the index's predicate names it, so the plan
    reads that index alone), or where no slice holds them, from the whole one."""
    found: list[Found] = []
    with windows.serial(True):
        for first, last, sliced in cut:
            within = where.narrowed(first, last, also=sliced.sql() if sliced else "")
            found += piece(within, wanted - len(found), sliced)
            if len(found) >= wanted:
                break
    return found


def keep(whole: bool) -> int:
    """Make the slices the docs need: all of them (`whole`), or at most one, and that at most every
    KEEP_SECONDS. Never fails the caller: a change that fails is rolled back and logged. Returns how
    many changes were made."""
    global _kept
    now = time.monotonic()
    if not whole and now - _kept < KEEP_SECONDS:
        return 0
    _kept = now
    made = 0
    try:
        while True:
            with transaction.atomic():
                if not fetch("SELECT pg_try_advisory_xact_lock(%s)", [LOCK])[0][0]:
                    return made  # another process is at it
                # A change waits for the pass's writes and takes the table from searches while it drops
                # an index: it gives up (and is tried again later) rather than hold either up long.
                fetch("SELECT set_config('lock_timeout', %s, true)", [LOCK_WAIT])
                _listed.clear()
                change = _next(listed())
                if not change:
                    return made
                with connection.cursor() as cursor:
                    for statement in change:
                        cursor.execute(statement)
            _listed.clear()
            made += 1
            if not whole:
                return made
    except DatabaseError:
        log.warning("the search index's slices were left as they were", exc_info=True)
        _listed.clear()
        return made


def _next(slices: list[Slice]) -> list[str]:
    """The statements of the next change the slices need, if any: the first slice (the newest docs),
    the newest one split, an older one its tapes grew split, or a slice of the docs below the oldest."""
    top = next((s for s in slices if s.high is None), None)
    if top is None:
        cut = _nth(SLICE, below=None, floor=1)
        if cut is None or _nth(SLICE, below=cut, floor=1) is None:
            return []  # fewer than two slices' docs: the whole index is as fast
        return [_create(Slice(cut, None))]
    if split := _split(top) or _grown(slices):
        return split
    lowest = slices[-1].low
    if lowest <= 1 or _nth(1, below=lowest, floor=1) is None:
        return []
    cut = _nth(SLICE, below=lowest, floor=1)
    if cut is None or _nth(SLICE, below=cut, floor=1) is None:
        cut = 1  # the oldest slice takes what is left: up to two slices' docs
    return [_create(Slice(cut, lowest - 1))]


def _grown(slices: list[Slice]) -> list[str]:
    """An older slice split where the docs made since this process last looked (an old tape's appends:
    a doc's id is its tape's and position's) grew it to two slices' docs. Only the slices that hold
    such docs are counted; once none of them is to be split, the docs are forgotten."""
    looked = sorted((low, high, tape) for tape, (low, high) in _made.items())
    lows = [low for low, _, _ in looked]
    reach = list(itertools.accumulate((high for _, high, _ in looked), max))  # the highest id so far
    for s in slices:
        n = bisect.bisect_right(lows, s.high) if s.high is not None else 0
        if n and reach[n - 1] >= s.low and (split := _split(s)):  # made docs in the slice
            return split
    for low, high, tape in looked:
        if low >= slices[-1].low and _made.get(tape) == (low, high):  # every slice they are in counted
            del _made[tape]
    return []


def _split(s: Slice) -> list[str]:
    """The slice cut in two where its newest SLICE docs begin, if it holds twice as many."""
    cut = _nth(SLICE, below=None if s.high is None else s.high + 1, floor=s.low)
    if cut is None or _nth(SLICE, below=cut, floor=s.low) is None:
        return []
    return [_create(Slice(s.low, cut - 1)), _create(Slice(cut, s.high)), f"DROP INDEX {s.name}"]


def _nth(n: int, below: int | None, floor: int) -> int | None:
    """The id of the nth newest doc from `floor` up and below `below`, if there are n."""
    upper = "" if below is None else f" AND id < {int(below)}"
    found = fetch(
        f"SELECT id FROM search_doc WHERE id >= %s{upper} ORDER BY id DESC OFFSET %s LIMIT 1", [floor, n - 1]
    )
    return found[0][0] if found else None


def _create(s: Slice) -> str:
    return f"CREATE INDEX {s.name} ON search_doc USING GIN (tsv) WHERE {s.sql()}"


def forget() -> None:
    """After a change elsewhere: the list is read again at the next query."""
    _listed.clear()
