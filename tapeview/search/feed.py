"""Keeping the search docs in step with the tape and memory indexes: the receivers of their signals.

A doc's id says what it is: tape_id << 32 | pos for an entry, -(store_id << 32 | n) for a memory
item, so a tape's docs (or a phase of them) are one id range.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from django.conf import settings

from memory_admin import catalog, versions
from memory_admin.models import MemoryStore
from memory_admin.stores.model import StoreError
from tapeview.tapes.models import Tape

from . import backends
from .backends import date_text
from .models import IndexedStore
from .text import entry_text, memory_docs

SHIFT = 32
LAST_POS = (1 << SHIFT) - 1


def tape_span(tape_id: int, first: int = 0, last: int = LAST_POS) -> tuple[int, int]:
    return tape_id << SHIFT | first, tape_id << SHIFT | min(last, LAST_POS)


def store_span(store_id: int) -> tuple[int, int]:
    return -(store_id << SHIFT | LAST_POS), -(store_id << SHIFT)


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


def entries_indexed(sender: object, tape: Tape, entries: Iterable, **kwargs: object) -> None:
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


def tape_reset(sender: object, tape_id: int, **kwargs: object) -> None:
    forget_tape(tape_id)


def forget_tape(tape_id: int) -> None:
    _last_system.pop(tape_id, None)
    backend = backends.current()
    if backend is not None:
        backend.delete(*tape_span(tape_id))


def store_changed(sender: object, store: MemoryStore, snapshot, **kwargs: object) -> None:
    index_store(store, snapshot)


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
        backend.delete(*store_span(store_id))


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
    catalog.sync_stores()
    marks = {m.store_id: m for m in IndexedStore.objects.all()}
    for store in MemoryStore.objects.all():
        mark = marks.get(store.pk)
        if mark is not None and (mark.size, mark.changed_at) == (store.size, store.changed_at):
            continue
        seen = store.version
        try:
            snap = versions.snapshot(store)  # a version not seen before is indexed on the way
        except (StoreError, OSError):
            continue  # caught mid-write or unreadable: the next search tries again
        if snap.version == "missing" or (mark is None and snap.version == seen):
            index_store(store, snap)
        IndexedStore.objects.update_or_create(
            store=store, defaults={"size": store.size, "changed_at": store.changed_at}
        )
