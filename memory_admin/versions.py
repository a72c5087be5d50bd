"""A store's versions: what it holds now, every version kept or listed, and the two a diff compares."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache
from django.db import IntegrityError, transaction

from tapeview.accounts.audit import WRITTEN, events_of
from tapeview.accounts.models import AuditEvent
from tapeview.sources import TapeNotFound
from tapeview.tapes.models import db_text
from tapeview.tapes.pictures.tallies import state_key

from . import diff
from .kinds import VersionChoice, VersionList, kind_of
from .models import MemoryStore, Revision
from .signals import store_changed
from .stores.model import Snapshot, StoreError

KEPT_SECONDS = 600  # as the tapes' pictures: what a list keeps holds until the files change


@dataclass(frozen=True)
class DiffPair:
    """The two versions a diff compares, and their texts (`frm` None: from nothing)."""

    frm: str | None
    to: str
    old: str
    new: str


def snapshot(store: MemoryStore, origin: str = "seen") -> Snapshot:
    """The store's content now; a version not seen before is kept as a revision (StoreError if unreadable)."""
    snap = kind_of(store).read(store)
    remember(store, snap.version, snap.text, Revision.NOT_TEXT if snap.not_text else origin, snap)
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
            # A NUL (a damaged file) is kept as U+FFFD: PostgreSQL's text cannot hold it.
            Revision.objects.create(store=store, version=version, text=db_text(text), origin=origin)
    except IntegrityError:
        pass  # this version is kept already


def versions(store: MemoryStore) -> list[VersionChoice]:
    """Every version the store can be compared at or restored to, newest first."""
    return kind_of(store).versions(store)


def version_text(store: MemoryStore, version: str) -> str:
    """The text of a version (LookupError if there is no such version)."""
    return kind_of(store).version_text(store, version)


def page_list(store: MemoryStore, before: int | None = None) -> VersionList:
    """The versions a page lists, newest first (those before `before`, where the kind pages them),
    and whether older ones exist beyond them; none where even the kept ones cannot be listed (a zone
    whose tape is gone)."""
    try:
        return kind_of(store).version_list(store, before)
    except (StoreError, TapeNotFound):
        return VersionList([])


def restored(store: MemoryStore, version: str) -> AuditEvent | None:
    """The restore through Tapeview that gave the store `version` back, if it is the last write made
    through Tapeview: a file whose versions are hashes holds an older version again, listed where
    it was first seen."""
    last = events_of(f"store:{store.key}").filter(outcome=WRITTEN).order_by("-at", "-id").first()
    if last and last.action == kind_of(store).restore_action and last.after == version:
        return last
    return None


def previous_version(store: MemoryStore, version: str) -> str | None:
    """The version before `version` in time, listed or not; None for the first version."""
    return kind_of(store).previous(store, version)


def diff_pair(store: MemoryStore, frm: str | None = None, to: str | None = None) -> DiffPair:
    """`frm` to `to`: `to` defaults to the current version, `frm` to the version before `to`.

    LookupError for a version the store does not have; the diff page and the diff API both ask here.
    """
    to = to or snapshot(store).version
    new = version_text(store, to)
    frm = frm or previous_version(store, to)
    old = version_text(store, frm) if frm else ""
    return DiffPair(frm, to, old, new)


def restore_changes(store: MemoryStore, version: str) -> tuple[list | diff.TooLarge | None, str]:
    """What restoring `version` changes, the file now against it, and the version the file is now:
    the question before a restore shows that diff and is answered on top of that version. (None,
    "") where either cannot be read here (no such version, a file unreadable or on a host with no
    copy: the restore itself says why)."""
    try:
        now = snapshot(store)
        return diff.rows(now.text, version_text(store, version)), now.version
    except (LookupError, StoreError):  # TapeNotFound, NotCopied: LookupErrors
        return None, ""


def listed(store: MemoryStore) -> dict:
    """A store's versions, last change and size as its own page shows them: the revisions Tapeview kept
    (`store.versions`, counted by the list's query) and the file's time, or for a store that lists
    its own versions (a Bub zone: the file's time moves with every entry the agent appends) those,
    and its memory's size, not its tape's."""
    if kind_of(store).lists_revisions or store.tape is None:
        return {"versions": store.versions, "changed_at": store.changed_at, "size": store.size}
    # Kept until the zone's tape or a file beside it changes: a list of many zones reads none again.
    holders = [store.tape, *store.tape.attachments.filter(role="sidecar")]
    key = state_key("zone-versions", store.tape, tuple(state_key("holder", h) for h in holders))
    found = cache.get(key)
    if found is None:
        count, newest = kind_of(store).count(store)
        found = {"versions": count, "changed_at": newest}
        found["size"] = kind_of(store).size(store)
        cache.set(key, found, KEPT_SECONDS)
    changed_at = found["changed_at"] or store.changed_at
    return {"versions": found["versions"], "changed_at": changed_at, "size": found.get("size", store.size)}
