"""The memory domain the views and the API share: find stores, read them, write them, audit it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from django.conf import settings
from django.db import IntegrityError, transaction

from tapeview.accounts.audit import Actor, record
from tapeview.sources import SourceSpec
from tapeview.tapes import discovery, index
from tapeview.tapes.discovery import configured_sources
from tapeview.tapes.models import EntryRow, Tape

from . import diff, zones
from .models import MemoryStore, Revision
from .signals import store_changed
from .stores import araliya_kv, bub_zone_write, nanobot_memory, yachiyo_memory
from .stores.bub_zone_write import zone_text
from .stores.model import Snapshot, StaleEdit, StoreError, StoreRef

# Which store modules find memory in a source of each kind (Bub zones come from the tape index).
DISCOVERERS: dict[str, ModuleType] = {
    "nanobot": nanobot_memory,
    "yachiyo": yachiyo_memory,
    "araliya": araliya_kv,
}
READERS: dict[str, ModuleType] = {
    "nanobot.memory": nanobot_memory,
    "nanobot.file": nanobot_memory,
    "nanobot.history": nanobot_memory,
    "yachiyo.memory": yachiyo_memory,
    "araliya.kv": araliya_kv,
}


def store_key(source: str, kind: str, rel: str) -> str:
    return hashlib.blake2b(f"{source}\0{kind}\0{rel}".encode(), digest_size=8).hexdigest()


def sync_stores(specs: list[SourceSpec] | None = None) -> None:
    """Bring the list of memory stores up to date with the sources and the tape index."""
    specs = configured_sources() if specs is None else specs
    seen: set[str] = set()
    for spec in specs:
        if spec.kind == "bub":
            refs = _zone_refs(spec.label)
        elif spec.kind in DISCOVERERS:
            refs = [(ref, None) for ref in DISCOVERERS[spec.kind].discover(spec.path)]
        else:
            refs = []
        for ref, tape in refs:
            seen.add(_upsert(spec.label, ref, tape).key)
    MemoryStore.objects.exclude(key__in=seen).delete()


def _zone_refs(source: str) -> list[tuple[StoreRef, Tape]]:
    """A store per tape whose memory zone is in the tape itself or in its memory sidecar."""
    holders = Tape.objects.filter(
        source=source, pk__in=EntryRow.objects.filter(kind="anchor", name="memory/seal").values("tape")
    )
    chosen: dict[int, tuple[Tape, Tape]] = {}
    for holder in holders.select_related("owner").order_by("pk"):
        tape = holder.owner if holder.role == "sidecar" and holder.owner else holder
        # As zones.zones_of reads it: once the sidecar holds a zone, the sidecar is where it lives.
        if tape.pk not in chosen or holder != tape:
            chosen[tape.pk] = (tape, holder)
    return [
        (StoreRef(tape.rel, "bub.zone", "memory zone", tape.label, Path(holder.path)), tape)
        for tape, holder in chosen.values()
    ]


def _upsert(source: str, ref: StoreRef, tape: Tape | None) -> MemoryStore:
    key = store_key(source, ref.kind, ref.key)
    store = MemoryStore.objects.filter(key=key).first() or MemoryStore(key=key, source=source, kind=ref.kind)
    store.rel, store.path, store.title, store.owner = ref.key, str(ref.path), ref.title, ref.owner
    store.editable, store.note, store.tape = ref.editable, ref.note, tape
    seen = (store.size, store.changed_at)
    try:
        st = ref.path.stat()
        store.size, store.changed_at = st.st_size, datetime.fromtimestamp(st.st_mtime, UTC)
    except OSError:
        store.size, store.changed_at = 0, None
    store.save()
    if store.changed_at and (store.size, store.changed_at) != seen:
        # A new version on disk: keep it now, not only when someone opens the page.
        snapshot(store)
    return store


def ref_of(store: MemoryStore) -> StoreRef:
    return StoreRef(
        store.rel, store.kind, store.title, store.owner, Path(store.path), store.editable, store.note
    )


def snapshot(store: MemoryStore, origin: str = "seen") -> Snapshot:
    """The store's content now; a version not seen before is kept as a revision."""
    if store.kind == "bub.zone":
        found = zones.zones_of(store.tape)
        snap = zones.snapshot(found)
    else:
        snap = READERS[store.kind].read(ref_of(store))
    remember(store, snap.version, snap.text, origin, snap)
    return snap


def remember(store: MemoryStore, version: str, text: str, origin: str, snap: Snapshot | None = None) -> None:
    if version == "missing":
        return
    if store.version != version:
        store.version = version
        store.save(update_fields=["version"])
        store_changed.send(sender=MemoryStore, store=store, snapshot=snap or Snapshot(version, text))
    try:
        with transaction.atomic():
            Revision.objects.create(store=store, version=version, text=text, origin=origin)
    except IntegrityError:
        pass


def audit(
    store: MemoryStore,
    actor: Actor,
    action: str,
    before: Snapshot,
    after_text: str,
    after_version: str,
    **detail,
) -> None:
    record(
        actor,
        action,
        subject=f"store:{store.key}",
        target=f"{store.source}: {store.title} ({store.owner})",
        before=before.version,
        after=after_version,
        diff=diff.unified(
            before.text, after_text, f"{store.title}@{before.version}", f"{store.title}@{after_version}"
        ),
        detail=detail,
    )


TEXT_KINDS = {"nanobot.memory", "nanobot.file"}


@dataclass(frozen=True)
class VersionChoice:
    version: str
    label: str


def _written(
    store: MemoryStore, actor: Actor, action: str, write: Callable[[], object], **detail
) -> Snapshot:
    """Run one write, then record what it changed in the revisions and the audit log."""
    before = snapshot(store)
    write()
    after = snapshot(store, "written")
    audit(store, actor, action, before, after.text, after.version, **detail)
    return after


def save_text(
    store: MemoryStore, text: str, base_version: str, actor: Actor, action: str = "edit"
) -> Snapshot:
    """Replace a text file's content if it still has `base_version` (else StaleEdit)."""
    if not store.editable or store.kind not in TEXT_KINDS:
        raise StoreError(f"{store.title} is not edited as text")
    ref = ref_of(store)
    return _written(
        store, actor, action, lambda: nanobot_memory.write(ref, text, base_version, editor=actor.name)
    )


def restore(store: MemoryStore, version: str, base_version: str, actor: Actor) -> Snapshot:
    """Write an earlier version back as a new version."""
    if store.kind == "bub.zone":
        return zone_write(store, actor, "restore", base_version, version=int(version))
    return save_text(store, version_text(store, version), base_version, actor, action="restore")


def versions(store: MemoryStore) -> list[VersionChoice]:
    """Every version the store can be compared at or restored to, newest first."""
    if store.kind == "bub.zone":
        found = zones.zones_of(store.tape)
        return [VersionChoice(str(z.version), f"v{z.version}") for z in reversed(found["zones"])]
    out = [
        VersionChoice(r.version, f"{r.seen_at:%Y-%m-%d %H:%M:%S} · {r.origin} · {r.version[:8]}")
        for r in store.revisions.all()
    ]
    out += [VersionChoice(f"git:{c.id}", f"git {c.id[:8]} · {c.subject}") for c in commits(store)]
    return out


def version_text(store: MemoryStore, version: str) -> str:
    """The text of a version (LookupError if there is no such version)."""
    if store.kind == "bub.zone":
        found = zones.zones_of(store.tape)
        zone = next((z for z in found["zones"] if str(z.version) == version), None)
        if zone is None:
            raise LookupError(f"no version {version!r} of this memory zone")
        return zone_text(zone)
    if version.startswith("git:"):
        try:
            text = nanobot_memory.text_at(ref_of(store), version[4:])
        except StoreError as exc:
            raise LookupError(str(exc)) from None
        return text or ""
    rev = store.revisions.filter(version=version).first()
    if rev is None:
        raise LookupError(f"no version {version!r} of {store.title}")
    return rev.text


def previous_version(store: MemoryStore, version: str) -> str | None:
    choices = [v.version for v in versions(store)]
    if version in choices and choices.index(version) + 1 < len(choices):
        return choices[choices.index(version) + 1]
    return None


def commits(store: MemoryStore) -> list:
    if not store.kind.startswith("nanobot.") or store.kind == "nanobot.history":
        return []
    return nanobot_memory.versions(ref_of(store), limit=50)


def history_context(store: MemoryStore, query: str) -> dict:
    ref = ref_of(store)
    return {
        "history": nanobot_memory.history(ref, query or None),
        "progress": nanobot_memory.dream_progress(ref.path.parents[1]),
        "q": query,
    }


def zone_cuts_context(store: MemoryStore) -> bool:
    """A zone kept in the live tape: each write makes memory/seal the agent's last anchor."""
    return bub_zone_write.cuts_context(Path(store.path))


def zone_write(store: MemoryStore, actor: Actor, action: str, base_version: str, **params) -> Snapshot:
    """One zone mutation (long_term, daily, prune, clear, restore), appended by the guest-write rules."""
    target, quiet = Path(store.path), {"quiet_seconds": settings.TAPEVIEW_QUIET_SECONDS}
    expected = None if base_version in ("missing", "none", "") else int(base_version)
    operations = {
        "long_term": lambda: bub_zone_write.write_long_term(target, params["text"], expected, **quiet),
        "daily": lambda: bub_zone_write.add_daily(target, params["text"], expected, **quiet),
        "prune": lambda: bub_zone_write.prune(target, params["days"], expected, **quiet),
        "clear": lambda: bub_zone_write.clear(target, expected, **quiet),
        "restore": lambda: bub_zone_write.restore(target, params["version"], expected, **quiet),
    }

    def write() -> None:
        operations[action]()
        index.refresh(store.tape)
        for attachment in store.tape.attachments.all():
            index.refresh(attachment)

    return _written(store, actor, f"zone.{action}", write, target=target.name, **_public(params))


def zone_move(store: MemoryStore, actor: Actor, base_version: str) -> Snapshot:
    """Keep the zone in `<tape>__sidecar__memory.jsonl` from now on: the agent never reads it there,
    so later memory writes no longer cut the agent's context (formats/bub.md §8)."""
    target = bub_zone_write.memory_sidecar(Path(store.tape.path))
    if target == Path(store.path):
        raise StoreError("the zone is in its memory sidecar already")
    current = zones.zones_of(store.tape)["current"]
    if base_version != (str(current.version) if current else "missing"):
        raise StaleEdit(zone_text(current), str(current.version) if current else "missing")
    existing = bub_zone_write.current_zone(target)
    quiet = settings.TAPEVIEW_QUIET_SECONDS

    def write() -> None:
        bub_zone_write.copy_zone(current, target, existing.version if existing else None, quiet_seconds=quiet)
        discovery.sync()  # the new sidecar joins the index as the tape's attachment

    snap = _written(store, actor, "zone.move", write, target=target.name)
    sync_stores()
    return snap


def _public(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != "text"}


def prune_preview(store: MemoryStore, days: int) -> list[str]:
    zone = zones.zones_of(store.tape)["current"]
    return bub_zone_write.prune_preview(zone, days)


def entry_write(store: MemoryStore, actor: Actor, action: str, base_version: str, **params) -> Snapshot:
    """Add, edit or delete a yachiyo memory entry by the agent's own rules."""
    ref, now = ref_of(store), datetime.now(UTC)
    operations = {
        "add": lambda: yachiyo_memory.add_entry(
            ref, params["content"], params["keywords"], base_version, now=now
        ),
        "edit": lambda: yachiyo_memory.edit_entry(
            ref, params["entry_id"], params["content"], params["keywords"], base_version, now=now
        ),
        "delete": lambda: yachiyo_memory.delete_entry(ref, params["entry_id"], base_version, now=now),
    }
    return _written(store, actor, f"entry.{action}", operations[action], **_public(params))


def kv_write(store: MemoryStore, actor: Actor, action: str, base_version: str, **params) -> Snapshot:
    """Set or delete an araliya kv entry, with the agent's cap and eviction."""
    ref = ref_of(store)
    operations = {
        "set": lambda: araliya_kv.set_value(ref, params["key"], params["value"], base_version),
        "delete": lambda: araliya_kv.delete_value(ref, params["key"], base_version),
    }
    return _written(store, actor, f"kv.{action}", operations[action], key=params["key"])
