"""The id ranges PostgreSQL search looks for a query's newest candidates in (backends.PostgreSQL.find),
sized from PostgreSQL's own statistics of the docs table."""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

from django.db import connection

from .docs import Where, fetch
from .text import Term

STATS_SECONDS = 60.0  # how long PostgreSQL's statistics of the docs are kept before they are read again
# Matches past WALK * sqrt(candidates * docs): walking the primary key down finds the candidates
# sooner than a window's GIN bitmap, whose cost grows with the matches of the whole table
# (measured at 2M docs: a word in 2-4 % of them is walked faster, a phrase of such words is not).
WALK = 0.7
WIDEST = 10  # hundredths of the docs in a window at most
WINDOWS = 4  # windows at most: the last one is the rest of the range
MARGIN = 1.6  # a window holds this many times the candidates the statistics (or the last window) say
FEW = 8  # the GIN index's matches (words and tags) up to FEW * candidates: all read, in one range


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
    (if it did not) from the matches the first held, or the rest at once where it held none."""

    def __init__(self, where: Where, wanted: int, query: list[Term]) -> None:
        self.where, self.wanted, self.found, self.taken = where, wanted, 0, 0
        self.walk = False  # the statistics say: walk the primary key down (see backends._matching)
        self.stats = stats()
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
        if (since or until) and len(known.dates) > 2:
            low = bisect.bisect_left(known.dates, since) if since else 0
            high = bisect.bisect_left(known.dates, until) if until else len(known.dates)
            share *= max(high - low, 1) / (len(known.dates) - 1)
        matches = share * known.docs
        # The walk reads wanted * docs / matches rows (a phrase's twice as dear, its positions read);
        # a window's bitmaps cost as the GIN index's matches.
        walk = WALK if all(len(term.words) == 1 for term in query) else 2 * WALK
        if indexed * matches > walk**2 * self.wanted * known.docs:
            self.walk = True
            return 0
        return self._fit(math.ceil(100 * self.wanted / matches * MARGIN))

    def _fit(self, buckets: int) -> int:
        """At most WIDEST hundredths of the docs: past that the planner, misled by a phrase's
        estimate, may read all the GIN index's matches (the rows of the window's bitmap ANDed out)."""
        return min(buckets, WIDEST)

    def __iter__(self) -> Iterator[tuple[int, int]]:
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


def forget() -> None:
    """After an ANALYZE: the statistics are read again at the next query."""
    _stats.clear()
