"""Every write to a memory store, each kept as a revision and recorded in the audit log.

A write's audit row is made before the write touches the file, as a pending intent that names
the version the file is about to get, and is settled after it. A writer killed in between
leaves a pending row, which the next write of the store settles by looking at the file:
written if the file holds (or held) that version, else not written once its writer is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from tapeview.accounts import audit
from tapeview.accounts.audit import Actor, record
from tapeview.accounts.models import AuditEvent
from tapeview.sources import TapeBusy

from . import diff
from .catalog import keep_copies, refresh_stat, sync_stores
from .kinds import KEPT, AraliyaKv, BubZone, YachiyoMemory, kind_of, require
from .models import MemoryStore
from .stores import bub_zone
from .stores.bub_zone import memory_sidecar
from .stores.files import announcing
from .stores.model import Snapshot, StaleEdit, StoreError
from .versions import snapshot

log = logging.getLogger(__name__)

# Raised before a write begins: nothing was written, and a refusal is not a write to log (a
# conflict, StaleEdit, is logged as refused: an editor's change met another's).
REFUSALS = (StaleEdit, StoreError, TapeBusy, LookupError)


def save_text(store: MemoryStore, text: str, base_version: str, actor: Actor) -> Snapshot:
    """Replace a text file's content if it still has `base_version` (else StaleEdit)."""
    if not kind_of(store).takes_text(store):
        raise StoreError(f"{store.title} is not edited as text")
    return replace_long_term(store, text, base_version, actor)


def replace_long_term(store: MemoryStore, text: str, base_version: str, actor: Actor) -> Snapshot:
    """A text file's whole content, or a Bub zone's long-term text (a new zone version)."""
    refuse_kept(store)
    adapter = kind_of(store)
    if not adapter.takes_long_term(store):
        raise StoreError(f"{store.kind} stores have no long-term text to replace")
    return _written(
        store,
        actor,
        base_version,
        adapter.long_term_action,
        lambda: adapter.write_long_term(store, text, base_version, actor.name),
        expect=_next_zone(store, base_version),
    )


def restore(store: MemoryStore, version: str, base_version: str, actor: Actor) -> Snapshot:
    """Write an earlier version back as a new version."""
    refuse_kept(store)
    adapter = kind_of(store)
    if not adapter.restores(store):
        raise StoreError(f"{store.title} cannot be restored to an earlier version here")
    return _written(
        store,
        actor,
        base_version,
        adapter.restore_action,
        lambda: adapter.restore(store, version, base_version, actor.name),
        expect=_next_zone(store, base_version),
        version=version,
    )


def zone_write(store: MemoryStore, actor: Actor, action: str, base_version: str, **params) -> Snapshot:
    """One zone mutation (long_term, daily, prune, clear, restore), appended by the guest-write rules."""
    zone = require(store, BubZone)
    return _written(
        store,
        actor,
        base_version,
        f"zone.{action}",
        lambda: zone.apply(store, action, base_version, **params),
        expect=_next_zone(store, base_version),
        **_public(params),
    )


def zone_move(store: MemoryStore, actor: Actor, base_version: str) -> Snapshot:
    """Keep the zone in its memory sidecar from now on (BubZone.move)."""
    zone = require(store, BubZone)
    sidecar = memory_sidecar(Path(store.tape.path))
    existing = bub_zone.current_zone(sidecar)
    expect = str((existing.version if existing else 0) + 1)  # as copy_zone numbers it
    snap = _written(
        store,
        actor,
        base_version,
        "zone.move",
        lambda: zone.move(store, base_version),
        expect=expect,
        target=sidecar.name,
    )
    sync_stores()  # the store's file is now the sidecar
    return snap


def entry_write(store: MemoryStore, actor: Actor, action: str, base_version: str, **params) -> Snapshot:
    """Add, edit or delete a yachiyo memory entry by the agent's own rules."""
    memory = require(store, YachiyoMemory)
    return _written(
        store,
        actor,
        base_version,
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
        base_version,
        f"kv.{action}",
        lambda: kv.apply(store, action, base_version, **params),
        key=params["key"],
    )


def refuse_kept(store: MemoryStore) -> None:
    """A store of a source no longer configured is only its kept versions: nothing is written to it."""
    if kind_of(store) is KEPT:
        raise StoreError(KEPT.why(store))


def _written(
    store: MemoryStore,
    actor: Actor,
    base: str,
    action: str,
    write: Callable[[], object],
    *,
    expect: str = "",
    **detail,
) -> Snapshot:
    """Run one write, recorded first as an intent and settled after; return the store as written.

    `expect`: the version the write gives the store, where it is known before the write (a zone's
    next number); a file rewrite names its own just before its rename (files.announcing).
    """
    before = snapshot(store)
    subject = f"store:{store.key}"
    settle_intents(store)
    title = store.title
    intent = record(
        actor,
        action,
        subject=subject,
        target=f"{store.source}: {title} ({store.owner})",
        before=before.version,
        after=expect,
        detail={**kind_of(store).audit_detail(store), **detail},
        outcome=audit.PENDING,
    )
    try:
        with announcing(lambda _path, version: audit.expect(intent, version)):
            write()
    except BaseException as exc:
        _settle_failed(store, intent, exc, base)
        raise
    try:
        after = snapshot(store, "written")
    except BaseException:
        audit.settle(intent, audit.WRITTEN, why="written; reading it back failed")
        raise
    audit.settle(
        intent,
        audit.WRITTEN,
        after=after.version,
        diff=diff.unified(before.text, after.text, f"{title}@{before.version}", f"{title}@{after.version}"),
    )
    refresh_stat(store)  # the page's header and the API show the file as written, not as last listed
    keep_copies(store)  # and a web tier on another machine, too
    return after


def settle_intents(store: MemoryStore) -> None:
    """Settle the pending audit rows of writers that stopped mid-write (killed, or the host died).

    Written if the file holds their version now, or was seen holding it since; not written if
    not, once their writer is gone. Rows of writers still at work are left to them.
    """
    intents = list(audit.intents_of(f"store:{store.key}"))
    if not intents:
        return
    now = _on_disk(store)
    # Only a writer that is gone: one at work settles its own row, and a version it expects may be
    # another writer's (two writes of a zone both expecting its next number: one lands, one is refused).
    for event in filter(audit.abandoned, intents):
        if event.after and (
            event.after == now.version
            or store.revisions.filter(version=event.after, seen_at__gte=event.at).exists()
        ):
            why = "confirmed later: the file held its version"
            audit.settle(event, audit.WRITTEN, why=why, diff=_confirmed_diff(store, event, now))
        else:
            audit.settle(event, audit.NOT_WRITTEN, why="its writer stopped before the file held its version")


def _settle_failed(store: MemoryStore, intent: AuditEvent, exc: BaseException, base: str) -> None:
    """What became of a write that raised: refused, failed, written after all, or unknown yet."""
    if isinstance(exc, StaleEdit) and _conflicts(store, intent, exc, base):
        why = f"a conflict: the file changed since its editor read it (it is at {exc.current_version})"
        audit.settle(intent, audit.REFUSED, why=why, after="")
        return
    if isinstance(exc, REFUSALS):
        audit.withdraw(intent)
        return
    why = str(exc) or type(exc).__name__
    try:
        now: Snapshot | None = _on_disk(store)
    except Exception:
        now = None
    if intent.after and now is None:
        # It may have reached the file: the next write of this store looks and settles it.
        log.warning("a write to %s failed (%s) and the file could not be read back", store.path, why)
    elif intent.after and now is not None and now.version == intent.after:
        audit.settle(intent, audit.WRITTEN, why=f"written, then: {why}")
    else:
        audit.settle(intent, audit.FAILED, why=why)


def _conflicts(store: MemoryStore, intent: AuditEvent, stale: StaleEdit, base: str) -> bool:
    """Whether a stale write met another's change of a version the store had: not a base it never
    had (a made-up value), nor the newer version of this writer's own write from that base (the same
    Save posted twice)."""
    if not store.revisions.filter(version=base).exists():
        return False
    own = audit.events_of(intent.subject).filter(
        actor=intent.actor, action=intent.action, before=base, after=stale.current_version
    )
    return not own.exclude(pk=intent.pk).filter(outcome__in=(audit.WRITTEN, audit.PENDING)).exists()


def _on_disk(store: MemoryStore) -> Snapshot:
    """What the store's file holds now, read from the file (a zone's index may lag behind it)."""
    if isinstance(kind_of(store), BubZone):
        zone = bub_zone.current_zone(Path(store.path))
        return Snapshot(str(zone.version) if zone else "missing", bub_zone.zone_text(zone))
    return kind_of(store).read(store)


def _next_zone(store: MemoryStore, base_version: str) -> str:
    """The version a zone edit gives the zone: one past the base, which it must still have."""
    if not isinstance(kind_of(store), BubZone):
        return ""
    if base_version in ("missing", "none", ""):
        return "1"
    if base_version.isascii() and base_version.isdigit() and len(base_version) < 18:
        return str(int(base_version) + 1)
    return ""  # refused as stale before anything is written


def _confirmed_diff(store: MemoryStore, event: AuditEvent, now: Snapshot) -> str:
    """The diff of a write confirmed later, from the versions kept as revisions ("" if one is not)."""
    kept = store.revisions.filter(version__in=[event.before, event.after])
    texts = dict(kept.values_list("version", "text"))
    texts["missing"] = ""
    texts[now.version] = now.text
    if event.before not in texts or event.after not in texts:
        return ""
    title = store.title
    return diff.unified(
        texts[event.before], texts[event.after], f"{title}@{event.before}", f"{title}@{event.after}"
    )


def _public(params: dict) -> dict:
    """What the audit log keeps of an edit's parameters: the text itself is in its diff."""
    return {k: v for k, v in params.items() if k != "text"}
