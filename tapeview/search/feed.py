"""Keeping the search docs in step with the tape and memory indexes: the receivers of their signals.

A doc's id says what it is: tape_id << 32 | pos for an entry, -(store_id << 32 | n) for a memory
item, so a tape's docs (or a phase of them) are one id range.
"""

from __future__ import annotations

import time

from django.conf import settings

from memory_admin import catalog, versions
from memory_admin.models import MemoryStore
from memory_admin.stores.model import StoreError
from tapeview.tapes.models import Tape

from . import backends, catchup
from .catchup import forget_tape
from .docs import LAST_POS, SHIFT, date_text, store_span, tags, tape_span
from .memory_text import memory_docs
from .models import IndexedStore, SearchedTape

__all__ = ["LAST_POS", "SHIFT", "store_span", "tape_span"]

# An increment this small is made searchable in the indexer's own transaction, read back from the
# file, so that what an agent just appended is found at once: a turn is a few entries, a debounced
# burst of a busy agent tens; 500 Bub entries tokenise in well under 100 ms. A bigger increment (a
# cold index, a tape that grew while nothing watched it) is left to the search pass.
SMALL = 500


def entries_indexed(sender: object, tape: Tape, **kwargs: object) -> None:
    """A batch of a tape's entries was indexed: searchable at once if the tape's search was caught up."""
    if backends.current() is None:
        return
    searched = SearchedTape.objects.filter(tape_id=tape.pk).values_list("next_pos", flat=True).first() or 1
    if tape.next_pos - searched <= SMALL:
        catchup.catch_up_tape(tape)


def tape_reset(sender: object, tape_id: int, **kwargs: object) -> None:
    forget_tape(tape_id)


def source_relabelled(
    sender: object, host: str, old: str, new: str, tape_ids: list[int], **kwargs: object
) -> None:
    """A doc carries its source's label (a column and a tag): those of a relabelled source are made
    again under the new one, its tapes' by the search pass, its stores' at the next memory refresh."""
    for tape_id in tape_ids:
        forget_tape(tape_id)
    stores = list(MemoryStore.objects.filter(host=host, source__in=[old, new]).values_list("pk", flat=True))
    IndexedStore.objects.filter(store_id__in=stores).delete()
    for store_id in stores:
        forget_store(store_id)


def indexer_idle(sender: object, budget: float | None = None, **kwargs: object) -> int:
    """The indexer read what it was told of: the search pass goes on for at most `budget` seconds, and
    then the index's upkeep: PostgreSQL's fresh docs moved into its GIN index in what is left of it,
    and its slices (all of them without a budget, else a step now and then)."""
    deadline = None if budget is None else time.monotonic() + budget
    made = catchup.catch_up(budget)
    backend = backends.current()
    if backend is not None:
        made += backend.refine(deadline)  # work done too: the watcher comes back soon while there is more
        backend.tidy(whole=budget is None)
    return made


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
            tags(store.source, store.kind, ""),
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
