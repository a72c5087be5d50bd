"""Full-text search of tape entries and memory items: FTS5 on SQLite, tsvector + GIN on PostgreSQL."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from django.conf import settings
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from memory_admin.models import MemoryStore
from tapeview.tapes.models import Tape

from . import backends, copies
from .docs import FIRST_ID, Found, Where
from .feed import refresh_memory_if_stale, store_span
from .filters import tape_where
from .snippets import Span, marked, marked_html
from .text import terms

ORDERS = ("relevance", "time")
# The best (or newest) matching entries that fold into groups; after them, hits come one by one.
WINDOW = 500
COUNT_LIMIT = 10_000  # matching entries counted at most: a count past it reads "10000+"


@dataclass(frozen=True)
class Hit:
    """One tape entry that matches, with the entries of its tape that repeat it (stream deltas,
    prompt copies) folded under it. `highlights` are [start, end) offsets into the plain `snippet`."""

    tape_key: str
    tape_label: str
    source: str
    pos: int
    kind: str
    name: str
    date: datetime | None
    score: float
    snippet: str = ""
    highlights: tuple[Span, ...] = ()
    copies: tuple[Hit, ...] = ()
    # The same entry of identical tapes (a tape copied into other folders): one hit, these beside it.
    twins: tuple[Hit, ...] = ()
    host: str = ""  # the tape's host: in a fleet, which machine it is on

    @property
    def role(self) -> str | None:
        return self.name if self.kind == "message" else None

    @property
    def snippet_html(self) -> SafeString:
        return mark_safe(marked_html(self.snippet, self.highlights))  # marked_html() escapes the agent's text

    @property
    def url(self) -> str:
        return reverse("tapes:tape_detail", args=[self.tape_key]) + f"?at={self.pos}#e{self.pos}"


@dataclass(frozen=True)
class MemoryHit:
    """One memory item (or text) that matches."""

    store_key: str
    store_title: str
    owner: str
    kind: str
    item: str
    date: datetime | None
    score: float
    snippet: str = ""
    highlights: tuple[Span, ...] = ()

    @property
    def snippet_html(self) -> SafeString:
        return mark_safe(marked_html(self.snippet, self.highlights))  # marked_html() escapes the agent's text

    @property
    def url(self) -> str:
        return reverse("memory_admin:store_detail", args=[self.store_key])


# What a count is of, where it is shown: a grep of the files counts lines, and more of them.
COUNT_NOTE = (
    "Counted as entries, repeated system prompts counted once: Bub writes the whole system prompt "
    "again for every model call, and a copy identical to the one before it is searched by its kind "
    "alone, so grep finds many more lines than search counts entries."
)


@dataclass(frozen=True)
class Count:
    """How many entries match: counted up to COUNT_LIMIT, or all of them (`exact`) within the
    time a count may take (settings.TAPEVIEW_SEARCH_COUNT_SECONDS). `capped`: more match than
    `total`, as far as counting went."""

    total: int
    capped: bool = False
    by_tape: dict[str, Count] = field(default_factory=dict)  # of the tapes asked about
    exact: bool = False  # all were asked for

    @property
    def timed_out(self) -> bool:
        """Every match was asked for, and counting them took longer than it may."""
        return self.exact and self.capped

    def __str__(self) -> str:
        if self.timed_out:
            return f"at least {self.total}"
        return f"{self.total}+" if self.capped else str(self.total)


def _parse_date(text: str) -> datetime | None:
    return datetime.fromisoformat(text).replace(tzinfo=UTC) if text else None


# Searching


def search(
    q: str, *, order: str = "relevance", limit: int = 50, offset: int = 0, **filters: object
) -> list[Hit]:
    """Tape entries matching every word and phrase of `q`, best (or newest) first, each with the
    entries of its tape that repeat it folded under it; `limit` and `offset` count those groups.

    Filters (see `filters.tape_where`): `source`, `tape_key`, `kinds`; `role` keeps messages of that role;
    `name` keeps events and anchors of that name or below it (`loop` finds `loop.step`); `since`
    and `until`; `within` keeps the entries from one anchor's position up to (not including)
    another's, on the tape `tape_key`; `review_label` and `review_score` keep the entries whose
    current review has that label or score.
    """
    backend = backends.current()
    if backend is None or order not in ORDERS:
        return []
    where = tape_where(**filters)
    if where is None:
        return []
    query = terms(q)
    # The hits past the window come from the same candidates: one query gives both where they are
    # all among the CANDIDATES ranked (a deeper page ranks more, as a query of its own does).
    ahead = WINDOW + offset + limit if WINDOW + offset + limit <= backends.CANDIDATES else WINDOW
    found = backend.find(q, where, order, ahead, 0)
    rows = found[:WINDOW]
    groups = copies.fold(rows, _bodies(backend, rows), query)
    folded = copies.twins(rows, groups, _twin_keys(backend, rows, groups))
    page = [
        ([rows[i] for i in group], [rows[i] for i in twins])
        for group, twins in folded[offset : offset + limit]
    ]
    if len(rows) == WINDOW and len(page) < limit:  # past the window: one hit per entry
        start = WINDOW + max(0, offset - len(folded))
        wanted = limit - len(page)
        past = (
            found[start : start + wanted] if ahead > WINDOW else backend.find(q, where, order, wanted, start)
        )
        page += [([row], []) for row in past]
    snippets = backend.snippets(q, [group[0].id for group, _ in page])
    # What a hit shows of its tape, not the tape's counts and state (2-5 ms more at scale 1).
    tapes = Tape.objects.only("key", "label", "host").in_bulk(
        {row.tape_id for group, twins in page for row in (*group, *twins)}
    )
    hits = []
    for (lead, *repeats), twins in page:
        tape = tapes.get(lead.tape_id)
        if tape is not None:
            found = sorted((_hit(row, tape) for row in repeats), key=lambda h: h.pos)
            text, spans = marked(snippets.get(lead.id, ""), query, f"{lead.kind} {lead.name}".strip())
            same = tuple(_hit(row, tapes[row.tape_id]) for row in twins if row.tape_id in tapes)
            hits.append(replace(_hit(lead, tape, text, spans, tuple(found)), twins=same))
    return hits


def _twin_keys(
    backend: backends.SQLite | backends.PostgreSQL, rows: list[Found], groups: list[list[int]]
) -> dict[int, tuple]:
    """What makes a lead the same entry as a lead of another tape: its place, kind, name and text,
    and its tape's kind, size, entries, first line and dates (a copy of the file). Only for the leads whose
    place, kind and name another tape's lead shares: their text is read."""
    place = {i: (rows[i].pos, rows[i].kind, rows[i].name) for i, *_ in groups if rows[i].tape_id is not None}
    tapes_at = defaultdict(set)
    for i, key in place.items():
        tapes_at[key].add(rows[i].tape_id)
    shared = [i for i, key in place.items() if len(tapes_at[key]) > 1]
    if not shared:
        return {}
    tapes = Tape.objects.filter(pk__in={rows[i].tape_id for i in shared})
    # A copy of the file: the same first line (its fingerprint), size, entries and span of dates.
    same_file = ("kind", "size", "entries", "head", "first_at", "last_at")
    alike = {pk: tuple(rest) for pk, *rest in tapes.values_list("pk", *same_file)}
    bodies = backend.bodies([rows[i].id for i in shared])
    return {
        i: (place[i], alike[rows[i].tape_id], bodies[rows[i].id])
        for i in shared
        if rows[i].tape_id in alike and rows[i].id in bodies
    }


def _bodies(backend: backends.SQLite | backends.PostgreSQL, rows: list[Found]) -> dict[int, str]:
    """The text of the rows that may repeat one another: those of tapes with more than one row."""
    per_tape = Counter(row.tape_id for row in rows)
    return backend.bodies([row.id for row in rows if per_tape[row.tape_id] > 1])


def _hit(
    row: Found, tape: Tape, text: str = "", spans: tuple[Span, ...] = (), repeats: tuple[Hit, ...] = ()
) -> Hit:
    return Hit(
        tape_key=tape.key,
        tape_label=tape.label,
        host=tape.host,
        source=row.source,
        pos=row.pos or 0,
        kind=row.kind,
        name=row.name,
        date=_parse_date(row.date),
        score=row.score,
        snippet=text,
        highlights=spans,
        copies=repeats,
    )


def count(q: str, *, tapes: Iterable[str] = (), exact: bool = False, **filters: object) -> Count:
    """How many tape entries match (the filters of `search`), and how many on each of `tapes`; with
    `exact`, the total counts every match where that takes at most TAPEVIEW_SEARCH_COUNT_SECONDS (past
    that, it is the capped count, `timed_out`). The counts of `tapes` stay capped."""
    backend = backends.current()
    where = tape_where(**filters) if backend is not None else None
    if backend is None or where is None:
        return Count(0, exact=exact)
    shown = Tape.objects.filter(key__in=list(tapes)).values_list("key", "pk", "next_pos")
    counted = backend.count_tapes(q, where, {tape_id: size for _, tape_id, size in shown}, COUNT_LIMIT + 1)
    by_tape = {key: _capped(counted[tape_id]) for key, tape_id, _ in shown}
    # The capped count first: it is cheap, and the most an exact count that ran out of time can say.
    # Where the shown tapes alone hold more matches than the limit (their docs are apart), it is theirs.
    shown_total = sum(counted.values())
    total = _capped(shown_total if shown_total > COUNT_LIMIT else backend.count(q, where, COUNT_LIMIT + 1))
    if exact and total.capped:
        counted = backend.count_within(q, where, settings.TAPEVIEW_SEARCH_COUNT_SECONDS)
        total = total if counted is None else Count(counted)
    return Count(total.total, total.capped, by_tape, exact)


def _capped(n: int) -> Count:
    return Count(min(n, COUNT_LIMIT), n > COUNT_LIMIT)


def search_memory(
    q: str,
    *,
    store_key: str | None = None,
    kind: str | None = None,
    order: str = "relevance",
    limit: int = 50,
    offset: int = 0,
) -> list[MemoryHit]:
    """Memory items matching every word and phrase of `q`; `kind` is a store kind or its family
    (`nanobot` finds `nanobot.memory` and `nanobot.history`). Stores whose files changed are read first."""
    backend = backends.current()
    if backend is None or order not in ORDERS:
        return []
    refresh_memory_if_stale()
    where = Where()
    where.span(FIRST_ID, -1)
    if store_key:
        store_id = MemoryStore.objects.filter(key=store_key).values_list("pk", flat=True).first()
        if store_id is None:
            return []
        where.span(*store_span(store_id))
    if kind:
        where.below("kind", kind, ".")
    found = backend.find(q, where, order, limit, offset)
    snippets = backend.snippets(q, [row.id for row in found])
    stores = MemoryStore.objects.in_bulk({row.store_id for row in found})
    hits = []
    for row in found:
        if (store := stores.get(row.store_id)) is not None:
            text, spans = marked(snippets.get(row.id, ""), terms(q))
            hits.append(
                MemoryHit(
                    store_key=store.key,
                    store_title=store.title,
                    owner=store.owner,
                    kind=row.kind,
                    item=row.item,
                    date=_parse_date(row.date),
                    score=row.score,
                    snippet=text,
                    highlights=spans,
                )
            )
    return hits
