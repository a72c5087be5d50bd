"""The memory API: stores, their content and versions, diffs, long-term edits, prunes, search."""

from __future__ import annotations

from datetime import datetime

from django.http import Http404, HttpRequest
from ninja import Field, Query, Router, Schema, Status

from tapeview.accounts.auth import writer
from tapeview.tapes import discovery
from tapeview.tapes.api.cursor import offset_page
from tapeview.tapes.api.schemas import TEXT, BusyOut, PageIn, responses

from . import service
from .diff import unified
from .models import MemoryStore
from .stores import bub_zone
from .stores.model import Snapshot, StaleEdit, StoreError

ZONE = "bub.zone"
MAX_CONTENT = 2_000_000  # characters of long-term memory: far beyond what an agent keeps


class ConflictOut(Schema):
    """409 stale: the store changed since `base_version`; nothing was written.

    `diff` is a unified diff from the current content to the content sent: what the edit would
    change if sent again with `base_version` = `current_version`.
    """

    detail: str
    current_version: str
    current_content: str
    diff: str


def conflict(stale: StaleEdit, sent: str) -> ConflictOut:
    return ConflictOut(
        detail="the store changed since base_version: nothing was written",
        current_version=stale.current_version,
        current_content=stale.current_text,
        diff=unified(stale.current_text, sent, f"current@{stale.current_version}", "sent"),
    )


class StoreOut(Schema):
    id: str = Field(description="opaque and URL-safe: the {store_id} of the store's other endpoints")
    source: str
    kind: str = Field(
        description="bub.zone, nanobot.memory, nanobot.file, nanobot.history, yachiyo.memory, ..."
    )
    title: str
    owner: str
    editable: bool
    note: str
    size_bytes: int
    changed_at: datetime | None
    version: str = Field(description="the version last seen; GET the store for the current one")
    tape_id: str | None = Field(description="the tape a Bub memory zone belongs to")
    long_term: bool = Field(description="whether PUT .../long-term applies to this store")
    prune: bool = Field(description="whether POST .../prune applies to this store")


class StoreDetailOut(StoreOut):
    content: str = Field(description="the whole store as text (for a Bub zone: long-term, then the notes)")
    long_term_text: str | None = Field(description="what PUT .../long-term replaces, where it applies")
    daily: dict[str, str] | None = Field(description="a Bub zone's notes by day")


class VersionOut(Schema):
    version: str
    label: str


class DiffOut(Schema):
    from_version: str | None = Field(description="null: from nothing (the first version)")
    to_version: str
    diff: str = Field(description="a unified diff")


class LongTermIn(Schema):
    content: str = Field(max_length=MAX_CONTENT, pattern=TEXT)
    base_version: str = Field(min_length=1, max_length=64, pattern=r"^[\w:.-]+$")


class PruneIn(Schema):
    older_than_days: int = Field(ge=0, le=36500)
    dry_run: bool = True
    base_version: str | None = Field(
        None, max_length=64, pattern=r"^[\w:.-]+$", description="default: the version the dry run sees now"
    )


class PruneOut(Schema):
    dry_run: bool
    removed: list[str] = Field(description="the days whose notes go (or went)")
    version: str = Field(description="the zone's version after the prune (now, for a dry run)")


class StorePageOut(Schema):
    items: list[StoreOut]
    next_cursor: str | None


class VersionPageOut(Schema):
    items: list[VersionOut]
    next_cursor: str | None


class StoreFilters(PageIn):
    source: str | None = Field(None, max_length=100, pattern=TEXT)
    kind: str | None = Field(None, max_length=40, pattern=TEXT, description="a kind or its family: nanobot")


router = Router(tags=["memory"])


def _store(key: str) -> MemoryStore:
    stores = MemoryStore.objects.select_related("tape")
    store = stores.filter(key=key).first() if key.isascii() and key.isalnum() and len(key) <= 32 else None
    if store is None:
        raise Http404("no such memory store")
    return store


def _store_out(store: MemoryStore) -> dict:
    fields = ("source", "kind", "title", "owner", "editable", "note", "changed_at", "version")
    return {
        "id": store.key,
        "size_bytes": store.size,
        "tape_id": store.tape.key if store.tape else None,
        "long_term": store.editable and (store.kind in service.TEXT_KINDS or store.kind == ZONE),
        "prune": store.kind == ZONE,
        **{f: getattr(store, f) for f in fields},
    }


def _detail(store: MemoryStore, snap: Snapshot) -> dict:
    long_term, daily = None, None
    if store.kind in service.TEXT_KINDS:
        long_term = snap.text
    elif store.kind == ZONE:
        zone = bub_zone.current(snap.items)
        long_term, daily = (zone.long_term, dict(zone.daily)) if zone else ("", {})
    return {**_store_out(store), "content": snap.text, "long_term_text": long_term, "daily": daily}


def _zone_base(store: MemoryStore, base: str) -> str:
    """A zone's versions are numbers: any other base is stale (409), never a crash."""
    if base in ("missing", "none") or (base.isascii() and base.isdigit() and len(base) < 18):
        return base
    snap = service.snapshot(store)
    raise StaleEdit(snap.text, snap.version)


def _conflict(store: MemoryStore, stale: StaleEdit, sent: str) -> ConflictOut:
    if store.kind != ZONE:
        return conflict(stale, sent)
    # A zone's conflict is about its long-term text, the part a long-term edit replaces.
    snap = service.snapshot(store)
    return conflict(StaleEdit(_detail(store, snap)["long_term_text"] or "", snap.version), sent)


@router.get("", response=responses({200: StorePageOut}, 400))
def list_stores(request: HttpRequest, filters: Query[StoreFilters]) -> dict:
    """Every memory store of every source."""
    discovery.sync_if_stale()
    service.sync_stores()
    stores = MemoryStore.objects.select_related("tape").order_by("source", "kind", "owner", "title", "key")
    if filters.source:
        stores = stores.filter(source=filters.source)
    if filters.kind:
        stores = stores.filter(kind__startswith=filters.kind)
    page, next_cursor = offset_page(stores, filters.cursor, filters.limit)
    return {"items": [_store_out(s) for s in page], "next_cursor": next_cursor}


@router.get("/{store_id}", response=responses({200: StoreDetailOut}, 404))
def get_store(request: HttpRequest, store_id: str) -> dict:
    """The store's current content and its `version`, which an edit must send back as `base_version`."""
    store = _store(store_id)
    return _detail(store, service.snapshot(store))


@router.get("/{store_id}/versions", response=responses({200: VersionPageOut}, 400, 404))
def list_versions(request: HttpRequest, store_id: str, page: Query[PageIn]) -> dict:
    """Every version the store can be compared at, newest first."""
    store = _store(store_id)
    service.snapshot(store)  # the current version joins the list if it is new
    items, next_cursor = offset_page(service.versions(store), page.cursor, page.limit)
    return {"items": items, "next_cursor": next_cursor}


@router.get("/{store_id}/diff", response=responses({200: DiffOut}, 404))
def get_diff(
    request: HttpRequest,
    store_id: str,
    frm: str | None = Query(None, alias="from", max_length=80, pattern=TEXT),
    to: str | None = Query(None, max_length=80, pattern=TEXT),
) -> dict:
    """From `from` (default: the version before `to`) to `to` (default: the current version)."""
    store = _store(store_id)
    to = to or service.snapshot(store).version
    try:
        new = service.version_text(store, to)
        frm = frm or service.previous_version(store, to)
        old = service.version_text(store, frm) if frm else ""
    except LookupError as exc:
        raise Http404(str(exc)) from None
    diff = unified(old, new, f"{store.title}@{frm or 'empty'}", f"{store.title}@{to}")
    return {"from_version": frm, "to_version": to, "diff": diff}


@router.put(
    "/{store_id}/long-term",
    response=responses({200: StoreDetailOut, 409: ConflictOut | BusyOut}, 400, 403, 404),
)
def update_long_term(request: HttpRequest, store_id: str, body: LongTermIn) -> Status:
    """Replace the long-term text if the store is still at `base_version`, else 409 with a diff.

    MEMORY.md and other text files are rewritten atomically; a Bub zone gets a new version appended.
    """
    actor = writer(request)
    store = _store(store_id)
    try:
        if store.kind in service.TEXT_KINDS:
            snap = service.save_text(store, body.content, body.base_version, actor)
        elif store.kind == ZONE:
            base = _zone_base(store, body.base_version)
            snap = service.zone_write(store, actor, "long_term", base, text=body.content)
        else:
            raise StoreError(f"{store.kind} stores have no long-term text to replace")
    except StaleEdit as stale:
        return Status(409, _conflict(store, stale, body.content))
    return Status(200, _detail(store, snap))


@router.post(
    "/{store_id}/prune", response=responses({200: PruneOut, 409: ConflictOut | BusyOut}, 400, 403, 404)
)
def prune_store(request: HttpRequest, store_id: str, body: PruneIn) -> Status:
    """Remove a Bub zone's notes older than `older_than_days`; a dry run says exactly which would go."""
    actor = writer(request)
    store = _store(store_id)
    if store.kind != ZONE:
        raise StoreError("prune applies to Bub memory zones only")
    snap = service.snapshot(store)
    removed = service.prune_preview(store, body.older_than_days)
    if body.dry_run or not removed:
        return Status(200, {"dry_run": body.dry_run, "removed": removed, "version": snap.version})
    try:
        base = _zone_base(store, body.base_version or snap.version)
        after = service.zone_write(store, actor, "prune", base, days=body.older_than_days)
    except StaleEdit as stale:
        return Status(409, conflict(stale, stale.current_text))
    return Status(200, {"dry_run": False, "removed": removed, "version": after.version})
