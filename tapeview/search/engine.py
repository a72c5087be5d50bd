"""Full-text search of tape entries and memory items: FTS5 on SQLite, tsvector + GIN on PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.urls import reverse
from django.utils.safestring import mark_safe

from memory_admin.models import MemoryStore
from tapeview.tapes.models import Tape

from . import backends
from .feed import LAST_POS, refresh_memory_if_stale, store_span, tape_span
from .text import highlight

ORDERS = ("relevance", "time")


@dataclass(frozen=True)
class Hit:
    """One tape entry that matches, with the words that matched marked in its snippet."""

    tape_key: str
    tape_label: str
    source: str
    pos: int
    kind: str
    name: str
    date: datetime | None
    snippet_html: str
    score: float

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
    snippet_html: str
    date: datetime | None
    score: float

    @property
    def url(self) -> str:
        return reverse("memory_admin:store_detail", args=[self.store_key])


def _parse_date(text: str) -> datetime | None:
    return datetime.fromisoformat(text).replace(tzinfo=UTC) if text else None


# Searching


def search(
    q: str,
    *,
    source: str | None = None,
    tape_key: str | None = None,
    kinds: list[str] | None = None,
    role: str | None = None,
    name: str | None = None,
    since: date | datetime | None = None,
    until: date | datetime | None = None,
    within: tuple[int, int] | None = None,
    order: str = "relevance",
    limit: int = 50,
    offset: int = 0,
) -> list[Hit]:
    """Tape entries matching every word and phrase of `q`, best (or newest) first.

    `role` keeps messages of that role; `name` keeps events and anchors of that name or below it
    (`loop` finds `loop.step`); `within` keeps the entries from one anchor's position up to (not
    including) another's, on the tape `tape_key`.
    """
    backend = backends.current()
    if backend is None or order not in ORDERS:
        return []
    where = backends.Where()
    where.add(f"{backend.id} > 0")
    if tape_key:
        tape_id = Tape.objects.filter(key=tape_key).values_list("pk", flat=True).first()
        if tape_id is None:
            return []
        first, last = within if within else (0, LAST_POS + 1)
        if last <= first:
            return []
        where.add(f"{backend.id} BETWEEN %s AND %s", *tape_span(tape_id, first, last - 1))
    elif within:
        raise ValueError("searching within a phase needs a tape")
    if source:
        where.add("source = %s", source)
    if kinds:
        where.add(f"kind IN ({', '.join(['%s'] * len(kinds))})", *kinds)
    if role:
        where.add("kind = 'message' AND name = %s", role)
    if name:
        where.below("name", name, "./")
    where.dates(since, until)
    found = backend.find(q, where, order, limit, offset)
    tapes = Tape.objects.in_bulk({row.tape_id for row in found})
    return [
        Hit(
            tape_key=tape.key,
            tape_label=tape.label,
            source=row.source,
            pos=row.pos,
            kind=row.kind,
            name=row.name,
            date=_parse_date(row.date),
            snippet_html=mark_safe(highlight(row.snippet)),  # highlight() escapes the agent's text
            score=row.score,
        )
        for row in found
        if (tape := tapes.get(row.tape_id)) is not None
    ]


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
    where = backends.Where()
    where.add(f"{backend.id} < 0")
    if store_key:
        store_id = MemoryStore.objects.filter(key=store_key).values_list("pk", flat=True).first()
        if store_id is None:
            return []
        where.add(f"{backend.id} BETWEEN %s AND %s", *store_span(store_id))
    if kind:
        where.below("kind", kind, ".")
    found = backend.find(q, where, order, limit, offset)
    stores = MemoryStore.objects.in_bulk({row.store_id for row in found})
    return [
        MemoryHit(
            store_key=store.key,
            store_title=store.title,
            owner=store.owner,
            kind=row.kind,
            item=row.item,
            snippet_html=mark_safe(highlight(row.snippet)),  # highlight() escapes the agent's text
            date=_parse_date(row.date),
            score=row.score,
        )
        for row in found
        if (store := stores.get(row.store_id)) is not None
    ]
