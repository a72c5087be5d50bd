"""Full-text search of tape entries and memory items: FTS5 on SQLite, tsvector + GIN on PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime

from django.conf import settings
from django.urls import reverse
from django.utils.safestring import mark_safe

from memory_admin.models import MemoryStore
from memory_admin.stores.model import StoreError
from tapeview.models import Tape

from . import backends
from .backends import date_text
from .models import IndexedStore
from .text import entry_text, highlight, memory_docs

SHIFT = 32
LAST_POS = (1 << SHIFT) - 1
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
        return reverse("tapeview:tape_detail", args=[self.tape_key]) + f"?at={self.pos}#e{self.pos}"


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


def _tape_span(tape_id: int, first: int = 0, last: int = LAST_POS) -> tuple[int, int]:
    return tape_id << SHIFT | first, tape_id << SHIFT | min(last, LAST_POS)


def _store_span(store_id: int) -> tuple[int, int]:
    return -(store_id << SHIFT | LAST_POS), -(store_id << SHIFT)


def _parse_date(text: str) -> datetime | None:
    return datetime.fromisoformat(text).replace(tzinfo=UTC) if text else None


# Keeping the index in step


# Bub writes the whole system prompt again for every LLM call (formats/bub.md §2.1): most of a
# tape's bytes. A prompt identical to the tape's previous one is indexed once, where it first
# appears; later copies keep only their kind. Per process, so a restart indexes one copy again.
_last_system: dict[int, int] = {}


def _searchable(tape_id: int, entry) -> str:
    text = entry_text(entry)
    if entry.kind == "system":
        digest = hash(text)
        if _last_system.get(tape_id) == digest:
            return entry.kind
        _last_system[tape_id] = digest
    return text


def index_entries(tape: Tape, entries: Iterable) -> None:
    """Add a batch of a tape's parsed entries (sources.Entry) to the search index."""
    backend = backends.current()
    if backend is None:
        return
    tape_id, source, row = tape.pk, tape.source, backend.row
    # Positional, in the order of backends.COLUMNS: this runs once per entry of every tape.
    rows = [
        row(
            tape_id << SHIFT | e.pos,
            _searchable(tape_id, e),
            "entry",
            tape_id,
            e.pos,
            None,
            "",
            source,
            e.kind,
            e.name[:200],
            date_text(e.date),
        )
        for e in entries
        if e.pos <= LAST_POS
    ]
    backend.insert(rows)


def forget_tape(tape_id: int) -> None:
    _last_system.pop(tape_id, None)
    backend = backends.current()
    if backend is not None:
        backend.delete(*_tape_span(tape_id))


def index_store(store: MemoryStore, snapshot) -> None:
    """Replace a memory store's docs by those of a snapshot (memory_admin.stores.model.Snapshot)."""
    backend = backends.current()
    if backend is None:
        return
    forget_store(store.pk)
    if snapshot.version == "missing":
        return
    rows = [
        backend.row(
            -(store.pk << SHIFT | n),
            doc.text,
            "memory",
            None,
            None,
            store.pk,
            doc.item,
            store.source,
            store.kind,
            store.title[:200],
            date_text(doc.date or store.changed_at),
        )
        for n, doc in enumerate(memory_docs(snapshot)[:LAST_POS], 1)
    ]
    backend.insert(rows)


def forget_store(store_id: int) -> None:
    backend = backends.current()
    if backend is not None:
        backend.delete(*_store_span(store_id))


def tape_deleted(sender, instance: Tape, **kwargs) -> None:
    forget_tape(instance.pk)


def store_deleted(sender, instance: MemoryStore, **kwargs) -> None:
    forget_store(instance.pk)


_last_refresh = float("-inf")


def refresh_memory_if_stale() -> None:
    """At most once per TAPEVIEW_REFRESH_SECONDS, as the tape pages sync the tape index."""
    global _last_refresh
    now = time.monotonic()
    if now - _last_refresh >= settings.TAPEVIEW_REFRESH_SECONDS:
        _last_refresh = now
        refresh_memory()


def refresh_memory() -> None:
    """Bring the memory docs up to date with the stores' files: only the stores that changed are read."""
    # Imported here: memory_admin.service calls index_store, so it imports this module.
    from memory_admin import service

    service.sync_stores()
    marks = {m.store_id: m for m in IndexedStore.objects.all()}
    for store in MemoryStore.objects.all():
        mark = marks.get(store.pk)
        if mark is not None and (mark.size, mark.changed_at) == (store.size, store.changed_at):
            continue
        seen = store.version
        try:
            snap = service.snapshot(store)  # a version not seen before is indexed on the way
        except (StoreError, OSError):
            continue  # caught mid-write or unreadable: the next search tries again
        if snap.version == "missing" or (mark is None and snap.version == seen):
            index_store(store, snap)
        IndexedStore.objects.update_or_create(
            store=store, defaults={"size": store.size, "changed_at": store.changed_at}
        )


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
        where.add(f"{backend.id} BETWEEN %s AND %s", *_tape_span(tape_id, first, last - 1))
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
        where.add(f"{backend.id} BETWEEN %s AND %s", *_store_span(store_id))
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
