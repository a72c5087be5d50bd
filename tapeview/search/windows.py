"""The id ranges PostgreSQL search looks for a query's newest candidates in (backends.PostgreSQL.find),
sized from PostgreSQL's own statistics of the docs table."""

from __future__ import annotations

import bisect
import functools
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction

from .docs import LAST_POS, SHIFT, Where, fetch
from .text import Term

STATS_SECONDS = 60.0  # how long PostgreSQL's statistics of the docs are kept before they are read again
# Matches past WALK * sqrt(candidates * docs): walking the primary key down finds the candidates
# sooner than a window's GIN bitmap, whose cost grows with the matches of the whole table
# (measured at 2M docs: a word in 2-4 % of them is walked faster, a phrase of such words is not;
# at 5.5M docs a word in 1.8 % of them was windowed faster: 42-47 against 50-53 ms).
WALK = 1.0
PHRASE_WALK = 1.4  # a phrase's walk reads its positions: twice as dear a row
WIDEST = 10  # hundredths of the docs in a window at most
WINDOWS = 4  # windows at most: the last one is the rest of the range
MARGIN = 1.2  # a window holds this many times the candidates the statistics (or the last window) say
# (1.6 before: at scale 1 a first window held 2x the candidates; 1.2 took no second window more)
FEW = 8  # the GIN index's matches (words and tags) up to FEW * candidates: all read, in one range
# Id ranges a window of a date filter's tapes names at most (the widest gaps between them kept): each is
# an index scan ORed into the window's bitmap, parsed and planned (3 ms for 300). Bridged to fewer, the
# rows of the tapes between cost more: at scale 0.4, a 90-day filter, 100 ranges 1.5x, 300 or 1000 1.3x.
RANGES = 300
WORKERS = "max_parallel_workers_per_gather"
# A window's GIN bitmap of 100,000+ matches outgrows the default 4 MB: it turns lossy, and each row
# of its pages is read and tested again (scale 1, a word's 150,000 matches: 75 ms for the bitmap alone).
BITMAP_MEMORY = "32MB"

Span = tuple[int, int]


@dataclass(frozen=True)
class Stats:
    """What PostgreSQL's statistics of the docs table say (as the last ANALYZE found them): the ids
    that cut the docs into hundredths, lowest first; how many docs there are; the share of docs that
    holds each of the most common words and tags, and the share at most any other holds."""

    bounds: list[int]
    dates: list[str]  # the dates that cut the docs into hundredths
    docs: float
    shares: dict[str, float]
    rare: float


_stats: dict[str, tuple[float, Stats]] = {}


def stats() -> Stats:
    """The statistics of the docs table, read again after STATS_SECONDS (or an ANALYZE here)."""
    key = connection.settings_dict["NAME"]
    now = time.monotonic()
    kept = _stats.get(key)
    if kept is None or now - kept[0] > STATS_SECONDS:
        of = "FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'search_doc' AND attname"
        bounds, dates, elems, freqs, docs = fetch(
            f"SELECT (SELECT histogram_bounds::text::bigint[] {of} = 'id'), "
            f"(SELECT histogram_bounds::text::text[] {of} = 'date'), "
            f"(SELECT most_common_elems::text::text[] {of} = 'tsv'), "
            f"(SELECT most_common_elem_freqs {of} = 'tsv'), "
            "(SELECT reltuples FROM pg_class WHERE oid = 'search_doc'::regclass)",
            [],
        )[0]
        shares = dict(zip(elems or [], freqs or [], strict=False))
        rare = min(shares.values(), default=0.0)
        known = Stats(bounds or [], dates or [], max(docs or 0, 0), shares, rare)
        kept = _stats[key] = (now, known)
    return kept[1]


class Windows:
    """The id ranges PostgreSQL looks for the newest `wanted` matches in, newest first, the next
    one chosen by the matches found so far (set `found` after each).

    A query that matches most docs finds its candidates fastest by walking the primary key down,
    one that matches few by the GIN index alone: both are one window, the whole range, and the
    planner's choice. In between (a word in 1-5 % of the docs, a phrase of common words), the
    walk reads every row down to the last candidate, and the GIN index every row that matches
    anywhere (150-400 ms a term at 2M docs). A window of the newest docs is answered by ANDing the
    GIN index's matches with the primary key's range, a bitmap of each, so only the rows that
    match in it are read; it is sized from the statistics to hold the candidates, and the next
    (if it did not) from the matches the first held, or the rest at once where it held none.

    A date filter keeps the docs of a few tapes (docs.Picked), spread over the whole id range: the
    windows, and the walk, are then those tapes' own id ranges, so a window costs what one of the
    unfiltered search does for as many matches, where a window of all ids held a quarter of them
    (measured at scale 0.4, a 90-day filter: 4 windows of 20 ms for a word the unfiltered search
    finds in one). Each window yields its bounds and, for such tapes, their ranges (`spans`)."""

    def __init__(self, where: Where, wanted: int, query: list[Term]) -> None:
        self.where, self.wanted, self.found, self.taken = where, wanted, 0, 0
        self.walk = False  # the statistics say: walk the primary key down (see backends._matching)
        self.stats = stats()
        self.picked = where.picked()
        self.by_tapes = False  # the windows are the picked tapes' (see `tapes`)
        self.buckets = self._first(query)

    def _first(self, query: list[Term]) -> int:
        """Hundredths of the docs the first window holds; 0 for the whole range at once."""
        known = self.stats
        if len(known.bounds) < 3 or not known.docs:
            return 0
        share = 1.0
        for term in query:
            if term.prefix:
                return 0  # no statistics of a prefix's words
            share = min(share, *(known.shares.get(w, known.rare) for w in term.words))
        for alternatives in self.where.tags:
            share *= min(1.0, sum(known.shares.get(t, known.rare) for t in alternatives))
        indexed = share * known.docs  # the GIN index's matches: its bitmap costs as many
        if indexed <= FEW * self.wanted:
            return 0  # few enough to read them all
        since, until = self.where.between
        if self.picked is not None:
            # Within the picked tapes the matches are as dense as anywhere: the windows skip the others.
            self.by_tapes = True
        elif (since or until) and len(known.dates) > 2:
            low = bisect.bisect_left(known.dates, since) if since else 0
            high = bisect.bisect_left(known.dates, until) if until else len(known.dates)
            share *= max(high - low, 1) / (len(known.dates) - 1)
        matches = share * known.docs
        # The walk reads wanted * docs / matches rows (a phrase's twice as dear, its positions read);
        # a window's bitmaps cost as the GIN index's matches.
        walk = WALK if all(len(term.words) == 1 for term in query) else PHRASE_WALK
        if indexed * matches > walk**2 * self.wanted * known.docs:
            self.walk = True
            return 0
        return self._fit(math.ceil(100 * self.wanted / matches * MARGIN))

    def _fit(self, buckets: int) -> int:
        """At most WIDEST hundredths of the docs: past that the planner, misled by a phrase's
        estimate, may read all the GIN index's matches (the rows of the window's bitmap ANDed out)."""
        return min(buckets, WIDEST)

    @functools.cached_property
    def tapes(self) -> list[tuple[int, int]]:
        """The picked tapes whose docs lie in the Where's span, newest first, with their entries, where
        the windows are theirs: read when the windows are walked (a search in slices never needs them)."""
        if not self.by_tapes:
            return []
        assert self.picked is not None
        low, high = max(self.where.first, 0) >> SHIFT, self.where.last >> SHIFT
        return [(tape, n) for tape, n in self.where.sizes(self.picked) if low <= tape <= high]

    def spans(self) -> tuple[str, str]:
        """All the picked tapes' id ranges at once, newest first (for a walk of them, one by one): their
        lowest and highest ids as two arrays' text (bound as lists, 2,400 numbers took the driver 3 ms)."""
        tapes = np.array([tape for tape, _ in self.tapes], dtype=np.int64)
        runs = np.flatnonzero(np.diff(tapes) != -1) + 1  # where a run of consecutive tapes starts
        lows = np.maximum(tapes[np.r_[runs - 1, len(tapes) - 1]] << SHIFT, self.where.first)
        highs = np.minimum(tapes[np.r_[0, runs]] << SHIFT | LAST_POS, self.where.last)
        return "{" + ",".join(map(str, lows.tolist())) + "}", "{" + ",".join(map(str, highs.tolist())) + "}"

    def __iter__(self) -> Iterator[tuple[int, int, list[Span] | None, list[int]]]:
        if self.picked is not None and self.tapes and self.buckets:
            yield from self._of_tapes()
            return
        for first, last in self._of_ids():
            yield first, last, None, []

    def _of_tapes(self) -> Iterator[tuple[int, int, list[Span] | None, list[int]]]:
        """Windows of the picked tapes, newest first, each holding a share of the docs by the tapes'
        entries: whole tapes, and the newest part of one bigger than what is left of the window. Each
        yields its bounds, its ranges (those of the most entries first: see docs.Where.ids_sql) and
        its tapes."""
        at, below, covered = 0, LAST_POS + 1, 0  # the tape at `at` left: its docs below position `below`
        while self.found < self.wanted and at < len(self.tapes):
            whole = self.taken + 1 >= WINDOWS or not self.buckets
            room = math.inf if whole else self.buckets * self.stats.docs / 100  # entries, for docs
            taken: list[tuple[int, int, int]] = []
            while at < len(self.tapes) and room > 0:
                tape, entries = self.tapes[at]
                left = min(entries, below)
                low = int(left - room) if left > room else 0
                taken.append(_span(tape, low, below - 1, left - low))
                room -= left - low
                at, below = (at, low) if low else (at + 1, LAST_POS + 1)
            spans = _spans(taken, self.where, RANGES)
            self.taken += 1
            biggest = [span[:2] for span in sorted(spans, key=lambda span: span[2], reverse=True)]
            yield spans[-1][0], spans[0][1], biggest, sorted({low >> SHIFT for low, _, _ in taken})
            covered += self.buckets
            left = self.wanted - self.found
            self.buckets = self._fit(math.ceil(covered * left / self.found * MARGIN)) if self.found else 0

    def _of_ids(self) -> Iterator[tuple[int, int]]:
        lowest, last, covered, bounds = self.where.first, self.where.last, 0, self.stats.bounds
        while self.found < self.wanted and last >= lowest:
            top = bisect.bisect_right(bounds, last) - 1
            whole = not self.buckets or top - self.buckets <= 0 or self.taken + 1 >= WINDOWS
            first = lowest if whole else max(lowest, bounds[top - self.buckets])
            self.taken += 1
            yield first, last
            covered += self.buckets
            left = self.wanted - self.found
            # None found: the matches are old ones, or few; either way the rest at once.
            self.buckets = self._fit(math.ceil(covered * left / self.found * MARGIN)) if self.found else 0
            last = first - 1


def _span(tape: int, first: int = 0, last: int = LAST_POS, entries: int = 0) -> tuple[int, int, int]:
    return tape << SHIFT | first, tape << SHIFT | last, entries


def _spans(spans: list[tuple[int, int, int]], where: Where, most: int) -> list[tuple[int, int, int]]:
    """These id ranges (newest first, none overlapping; each with its entries) within the Where's
    span, newest first: ranges that meet one range, and at most `most` ranges, the narrowest gaps
    (in tapes) between them bridged (the docs of a tape in a gap fail the date of the query anyway)."""
    runs: list[list[int]] = []
    for low, high, entries in spans:
        if runs and runs[-1][0] == high + 1:
            runs[-1][0] = low
            runs[-1][2] += entries
        else:
            runs.append([low, high, entries])
    if len(runs) > most:
        gaps = sorted(
            range(len(runs) - 1), key=lambda i: (runs[i][0] - runs[i + 1][1]) >> SHIFT, reverse=True
        )
        kept = sorted(gaps[: most - 1])
        runs = [
            [runs[end][0], runs[begin][1], sum(run[2] for run in runs[begin : end + 1])]
            for begin, end in zip([0, *(i + 1 for i in kept)], [*kept, len(runs) - 1], strict=True)
        ]
    return [(max(low, where.first), min(high, where.last), entries) for low, high, entries in runs]


@contextmanager
def serial(windowed: bool) -> Iterator[None]:
    """The queries within, when `windowed`, planned without parallel workers: a window holds about the
    candidates, which two workers read no faster than one process and pass on to it slower (measured at
    scale 0.4: a window of a date filter's tapes 39 -> 21 ms, of all docs 31 -> 24 ms), and with room
    for a bitmap of their GIN index's matches (BITMAP_MEMORY)."""
    if not windowed:
        yield
        return
    outer = connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting(%s), current_setting('work_mem'), "
            "set_config(%s, '0', true), set_config('work_mem', %s, true)",
            [WORKERS, WORKERS, BITMAP_MEMORY],
        )
        workers, memory = cursor.fetchone()[:2]
        yield
        if outer:  # SET LOCAL lasts until the end of the transaction: an outer one gets its own back
            again = "SELECT set_config(%s, %s, true), set_config('work_mem', %s, true)"
            cursor.execute(again, [WORKERS, workers, memory])


def forget() -> None:
    """After an ANALYZE: the statistics are read again at the next query."""
    _stats.clear()
