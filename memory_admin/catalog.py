"""The memory stores of the sources, found in their files and the tape index and kept as MemoryStore rows."""

from __future__ import annotations

import hashlib
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from django.conf import settings
from django.db import IntegrityError, transaction

from tapeview.sources import Refusal, SourceSpec, paths
from tapeview.tapes import filecopy
from tapeview.tapes import rows as index_rows
from tapeview.tapes.discovery import configured_sources, follow_relabels, this_host
from tapeview.tapes.models import Tape

from .kinds import kind_of
from .models import MemoryStore
from .stores import araliya_kv, bub_zone, nanobot_memory, yachiyo_memory
from .stores.model import StoreError, StoreRef
from .versions import snapshot

# Which store modules find memory in a source of each kind (Bub zones come from the tape index).
DISCOVERERS: dict[str, ModuleType] = {
    "nanobot": nanobot_memory,
    "yachiyo": yachiyo_memory,
    "araliya": araliya_kv,
}


def store_key(host: str, source: str, kind: str, rel: str) -> str:
    # Rows found before hosts existed keep the key they had: a row is found by its place, not its key.
    return hashlib.blake2b(f"{host}\0{source}\0{kind}\0{rel}".encode(), digest_size=8).hexdigest()


def sync_stores(specs: list[SourceSpec] | None = None) -> None:
    """Bring the memory stores of these sources (default: the configured ones) up to date with their
    files and the tape index.

    Only the stores of this host's sources named here are dropped when gone: another host's keep
    their rows, and this host's of a source no longer configured (nor named here) are kept with
    their versions, marked so (`configured`), their files no longer read. A source given another
    label keeps its stores (discovery.follow_relabels). Without sources it is a page's look at the
    files, which a web tier that leaves the index to another process skips (TAPEVIEW_WEB_INDEXES).
    """
    if specs is None and not settings.TAPEVIEW_WEB_INDEXES:
        return
    specs = configured_sources() if specs is None else specs
    follow_relabels(specs)
    labels = [spec.label for spec in specs]
    here = MemoryStore.objects.filter(host=this_host())
    here.exclude(source__in=labels).filter(configured=True).update(configured=False)
    here.filter(source__in=labels, configured=False).update(configured=True)
    seen: set[str] = set()
    for spec in specs:
        if spec.kind == "bub":
            refs = _zone_refs(spec.label)
        elif spec.kind in DISCOVERERS:
            refs = [(ref, None) for ref in DISCOVERERS[spec.kind].discover(spec.path)]
        else:
            refs = []
        roots = _roots(spec)
        for ref, tape in refs:
            # The path policy of the sources: a memory file that leads out of them is not read.
            if any(paths.refusal(root, ref.path) is None for root in roots):
                seen.add(_upsert(spec.label, ref, tape).key)
    gone = here.filter(source__in=labels).exclude(key__in=seen)
    if filecopy.enabled():
        filecopy.forget([str(path) for store in gone for path in _files(store)])
    gone.delete()


def source_relabelled(sender: object, host: str, old: str, new: str, **kwargs: object) -> None:
    """A source given another label keeps its stores, their keys and versions: the audit log and
    links name a store by its key. Where the new label has a store of the same place already, that
    one stays and the old label's is kept as a source no longer configured."""
    taken = set(MemoryStore.objects.filter(host=host, source=new).values_list("kind", "rel"))
    moved = [s.pk for s in MemoryStore.objects.filter(host=host, source=old) if (s.kind, s.rel) not in taken]
    MemoryStore.objects.filter(pk__in=moved).update(source=new, configured=True)


def refusal(store: MemoryStore) -> str | None:
    """The sources' path policy again at read time, as tapes have it: a file swapped for a link out
    of its source since the store was found is not read (until the next look drops the store)."""
    if store.host != this_host():
        return None  # read from its host's copies, which its host's policy made
    spec = next((s for s in configured_sources() if s.label == store.source), None)
    if spec is None:
        return None
    roots = _roots(spec)
    for path in {Path(store.path), *_files(store)}:
        refused = [paths.refusal(root, path) for root in roots]
        if None not in refused:
            return refused[0]
    return None


def _roots(spec: SourceSpec) -> list[Path]:
    """Where a source's memory may be: its folder, and for nanobot the workspace its config names."""
    workspace = nanobot_memory.find_workspace(spec.path) if spec.kind == "nanobot" else None
    return [spec.path, *([workspace] if workspace else [])]


def _zone_refs(source: str) -> list[tuple[StoreRef, Tape]]:
    """A store per tape whose memory zone is in the tape itself or in its memory sidecar."""
    sealed = index_rows.anchored(["memory/seal"])
    holders = sealed.filter(host=this_host(), source=source)
    chosen: dict[int, tuple[Tape, Tape]] = {}
    for holder in holders.select_related("owner").order_by("pk"):
        tape = holder.owner if holder.role == "sidecar" and holder.owner else holder
        # As zones.zones_of reads it: once the sidecar holds a zone, the sidecar is where it lives.
        if tape.pk not in chosen or holder != tape:
            chosen[tape.pk] = (tape, holder)
    return [
        (StoreRef(tape.rel, bub_zone.KIND, "memory zone", tape.label, Path(holder.path)), tape)
        for tape, holder in chosen.values()
    ]


def _upsert(source: str, ref: StoreRef, tape: Tape | None) -> MemoryStore:
    host = this_host()
    place = {"host": host, "source": source, "kind": ref.kind, "rel": ref.key}
    store = MemoryStore.objects.filter(**place).first() or MemoryStore(
        key=store_key(host, source, ref.kind, ref.key), **place
    )
    store.rel, store.path, store.title, store.owner = ref.key, str(ref.path), ref.title, ref.owner
    store.editable, store.note, store.tape = ref.editable, ref.note, tape
    seen = (store.size, store.changed_at)
    store.size, store.changed_at = _stat(ref.path)
    _save(store)
    keep_copies(store)
    if store.changed_at and (store.size, store.changed_at) != seen:
        # A new version on disk: keep it now, not only when someone opens the page.
        # Unreadable now (corrupt, too deep, caught mid-write): listed all the same; its page says why.
        with suppress(StoreError, OSError):
            snapshot(store)
    return store


def _save(store: MemoryStore) -> None:
    while True:
        try:
            with transaction.atomic():
                store.save()
            return
        except IntegrityError:
            if store.pk is not None or not MemoryStore.objects.filter(key=store.key).exists():
                raise
            # A relabelled source's store keeps the key its old label gave it: a new source with that
            # label gets another for the same place.
            store.key = hashlib.blake2b(store.key.encode(), digest_size=8).hexdigest()


def keep_copies(store: MemoryStore) -> None:
    """Where this host's files are copied for a web tier elsewhere (a fleet), bring the store's up to date."""
    if filecopy.enabled() and store.host == this_host():
        for path in _files(store):
            filecopy.keep(str(path), append_only=False)


def _files(store: MemoryStore) -> list[Path]:
    """The files a store's page reads, but a zone's tape: the index copies tapes itself."""
    return [] if store.tape_id else kind_of(store).files(store)


def refresh_stat(store: MemoryStore) -> None:
    """Bring the row's size and time up to the file's: a write, or the agent, may have changed it since.
    Another host's store is its own watcher's to keep: its file is not here."""
    if store.host != this_host():
        return
    found = _stat(Path(store.path))
    if (store.size, store.changed_at) != found:
        store.size, store.changed_at = found
        store.save(update_fields=["size", "changed_at"])


def _stat(path: Path) -> tuple[int, datetime | None]:
    try:
        st = path.stat()
    except OSError:
        return 0, None
    return st.st_size, datetime.fromtimestamp(st.st_mtime, UTC)


def sources_indexed(sender: object, specs: list[SourceSpec], **kwargs: object) -> None:
    sync_stores(specs)


def unread_files(sender: object, **kwargs: object) -> dict[str, list[Refusal]]:
    """Per configured source, the memory files found that are not read, and why: a link out of the
    source (sync_stores leaves its store out), or a file this process may not read."""
    found: dict[str, list[Refusal]] = {}
    for spec in configured_sources():
        if spec.kind not in DISCOVERERS or not spec.path.is_dir():
            continue
        roots, admitted = _roots(spec), []
        for ref in DISCOVERERS[spec.kind].discover(spec.path):
            refused = [paths.refusal(root, ref.path) for root in roots]
            if None in refused:
                admitted.append(ref.path)
            else:
                found.setdefault(spec.label, []).append(Refusal(ref.path, refused[0]))
        found.setdefault(spec.label, []).extend(paths.unreadable(admitted))
    return found
