"""Every write to a memory store, each kept as a revision and recorded in the audit log."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tapeview.accounts.audit import Actor, record

from . import diff
from .catalog import sync_stores
from .kinds import AraliyaKv, BubZone, YachiyoMemory, kind_of, require
from .models import MemoryStore
from .stores.bub_zone import memory_sidecar
from .stores.model import Snapshot, StoreError
from .versions import snapshot


def save_text(store: MemoryStore, text: str, base_version: str, actor: Actor) -> Snapshot:
    """Replace a text file's content if it still has `base_version` (else StaleEdit)."""
    if not kind_of(store).takes_text(store):
        raise StoreError(f"{store.title} is not edited as text")
    return replace_long_term(store, text, base_version, actor)


def replace_long_term(store: MemoryStore, text: str, base_version: str, actor: Actor) -> Snapshot:
    """A text file's whole content, or a Bub zone's long-term text (a new zone version)."""
    adapter = kind_of(store)
    if not adapter.takes_long_term(store):
        raise StoreError(f"{store.kind} stores have no long-term text to replace")
    return _written(
        store,
        actor,
        adapter.long_term_action,
        lambda: adapter.write_long_term(store, text, base_version, actor.name),
    )


def restore(store: MemoryStore, version: str, base_version: str, actor: Actor) -> Snapshot:
    """Write an earlier version back as a new version."""
    adapter = kind_of(store)
    if not adapter.restores(store):
        raise StoreError(f"{store.title} cannot be restored to an earlier version here")
    return _written(
        store,
        actor,
        adapter.restore_action,
        lambda: adapter.restore(store, version, base_version, actor.name),
        version=version,
    )


def zone_write(store: MemoryStore, actor: Actor, action: str, base_version: str, **params) -> Snapshot:
    """One zone mutation (long_term, daily, prune, clear, restore), appended by the guest-write rules."""
    zone = require(store, BubZone)
    return _written(
        store,
        actor,
        f"zone.{action}",
        lambda: zone.apply(store, action, base_version, **params),
        **_public(params),
    )


def zone_move(store: MemoryStore, actor: Actor, base_version: str) -> Snapshot:
    """Keep the zone in its memory sidecar from now on (BubZone.move)."""
    zone = require(store, BubZone)
    sidecar = memory_sidecar(Path(store.tape.path))
    snap = _written(store, actor, "zone.move", lambda: zone.move(store, base_version), target=sidecar.name)
    sync_stores()  # the store's file is now the sidecar
    return snap


def entry_write(store: MemoryStore, actor: Actor, action: str, base_version: str, **params) -> Snapshot:
    """Add, edit or delete a yachiyo memory entry by the agent's own rules."""
    memory = require(store, YachiyoMemory)
    return _written(
        store,
        actor,
        f"entry.{action}",
        lambda: memory.apply(store, action, base_version, **params),
        **_public(params),
    )


def kv_write(store: MemoryStore, actor: Actor, action: str, base_version: str, **params) -> Snapshot:
    """Set or delete an araliya kv entry, with the agent's cap and eviction."""
    kv = require(store, AraliyaKv)
    return _written(
        store,
        actor,
        f"kv.{action}",
        lambda: kv.apply(store, action, base_version, **params),
        key=params["key"],
    )


def _written(
    store: MemoryStore, actor: Actor, action: str, write: Callable[[], object], **detail
) -> Snapshot:
    """Run one write, then record what it changed in the revisions and the audit log."""
    before = snapshot(store)
    write()
    after = snapshot(store, "written")
    title = store.title
    record(
        actor,
        action,
        subject=f"store:{store.key}",
        target=f"{store.source}: {title} ({store.owner})",
        before=before.version,
        after=after.version,
        diff=diff.unified(before.text, after.text, f"{title}@{before.version}", f"{title}@{after.version}"),
        detail={**kind_of(store).audit_detail(store), **detail},
    )
    return after


def _public(params: dict) -> dict:
    """What the audit log keeps of an edit's parameters: the text itself is in its diff."""
    return {k: v for k, v in params.items() if k != "text"}
