"""The memory API: stores, their content and versions, diffs, exports, long-term edits, prunes."""

from __future__ import annotations

from contextlib import suppress

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.http import content_disposition_header
from ninja import Query, Router, Status

from tapeview.accounts.audit import Actor
from tapeview.accounts.auth import writer
from tapeview.outbox import queue as outbox
from tapeview.outbox.answers import api_answer
from tapeview.outbox.api import OutboxRequestOut
from tapeview.outbox.handlers import Result, handler
from tapeview.tapes import discovery
from tapeview.tapes.api.cursor import offset_page
from tapeview.tapes.api.schemas import TEXT, BusyOut, PageIn, responses

from .. import asof, export, versions, writes
from ..blame import blame
from ..catalog import refresh_stat, sync_stores
from ..kinds import kind_of
from ..lookup import find_store
from ..models import MemoryStore
from ..stores.model import Snapshot, StaleEdit, StoreError
from .schemas import (
    AsOfIn,
    BlamePageOut,
    ConflictOut,
    DiffOut,
    ExportIn,
    ExportOut,
    LongTermIn,
    PruneIn,
    PruneOut,
    StoreDetailOut,
    StoreFilters,
    StorePageOut,
    VersionPageOut,
    conflict,
    diff_out,
)

router = Router(tags=["memory"])


def _store_out(store: MemoryStore, snap: Snapshot | None = None) -> dict:
    fields = ("source", "kind", "title", "owner", "editable", "note", "version")
    adapter = kind_of(store)
    return {
        "id": store.key,
        **_own_figures(store, snap),
        "file_size_bytes": store.size,
        "tape_id": store.tape.key if store.tape else None,
        "source_configured": store.configured,
        "long_term": adapter.takes_long_term(store),
        "prune": adapter.prune,
        **{f: getattr(store, f) for f in fields},
    }


def _own_figures(store: MemoryStore, snap: Snapshot | None) -> dict:
    """The size and last change the pages show: a Bub zone's own memory and newest version, not its
    tape's (which grows and moves with every entry); the list's from the Memory list's cache, read
    once per zone until its files change, a store's from `snap`, its current content."""
    adapter = kind_of(store)
    if adapter.lists_revisions or store.tape is None:
        return {"size_bytes": store.size, "changed_at": store.changed_at}
    if snap is None:
        own = versions.listed(store)
        return {"size_bytes": own["size"], "changed_at": own["changed_at"]}
    newest = versions.page_list(store).choices
    changed_at = newest[0].date if newest and newest[0].date else store.changed_at
    return {"size_bytes": adapter.size(store, snap), "changed_at": changed_at}


def _detail(store: MemoryStore, snap: Snapshot, now: Snapshot | None = None) -> dict:
    adapter = kind_of(store)
    out = _store_out(store, now)
    out["long_term"] = out["long_term"] and not (now and now.not_text)  # shown, never rewritten
    return {
        **out,
        "not_text": snap.not_text or None,
        "content": snap.text,
        "long_term_text": adapter.long_term_text(snap),
        "daily": adapter.daily(snap),
    }


def _conflict(store: MemoryStore, sent: str) -> ConflictOut:
    """About the long-term text, the part a long-term edit replaces (of a zone: not its notes)."""
    snap = versions.snapshot(store)
    return conflict(StaleEdit(kind_of(store).long_term_text(snap) or "", snap.version), sent)


@router.get("", response=responses({200: StorePageOut}, 400))
def list_stores(request: HttpRequest, filters: Query[StoreFilters]) -> dict:
    """Every memory store of every source."""
    discovery.sync_if_stale()
    sync_stores()
    stores = MemoryStore.objects.select_related("tape").order_by("source", "kind", "owner", "title", "key")
    if filters.source:
        stores = stores.filter(source=filters.source)
    if filters.kind:
        stores = stores.filter(kind__startswith=filters.kind)
    page, next_cursor = offset_page(stores, filters.cursor, filters.limit)
    return {"items": [_store_out(s) for s in page], "next_cursor": next_cursor}


@router.get("/{store_id}", response=responses({200: StoreDetailOut}, 400, 404))
def get_store(request: HttpRequest, store_id: str, past: Query[AsOfIn]) -> dict:
    """The store's current content and its `version`, which an edit must send back as `base_version`.

    With `as_of`: the newest version seen at or before that time (404 before the first). 400 when
    the agent's file cannot be read (corrupt, or nested too deep).
    """
    store = find_store(store_id)
    refresh_stat(store)
    if past.as_of is None:
        return _detail(store, snap := versions.snapshot(store), snap)
    point = asof.Point.at(past.as_of)
    with suppress(StoreError):  # the version on disk now joins the history, if the file is readable
        versions.snapshot(store)
    try:
        step = asof.version_at(store, point)
    except LookupError as exc:
        raise Http404(str(exc)) from None
    return {**_detail(store, asof.snapshot_of(step)), "version": step.version, "as_of": point.when}


@router.get("/{store_id}/blame", response=responses({200: BlamePageOut}, 400, 404))
def list_blame(request: HttpRequest, store_id: str, page: Query[PageIn]) -> dict:
    """Each line of the current content: the version that introduced it, when, and by whom.

    `author` is `agent` or the Tapeview user (then `source.audit_id` is the audit row). `source`
    points at the tape entry that wrote the line (a Bub `memory_save` call or `memory/seal`, a
    yachiyo `memory_write` trace), nanobot's commit, or null where nothing records it (araliya).
    """
    store = find_store(store_id)
    items, next_cursor = offset_page(blame(store), page.cursor, page.limit)
    return {"items": items, "next_cursor": next_cursor}


@router.get("/{store_id}/versions", response=responses({200: VersionPageOut}, 400, 404))
def list_versions(request: HttpRequest, store_id: str, page: Query[PageIn]) -> dict:
    """Every version the store can be compared at, newest first."""
    store = find_store(store_id)
    if store.configured:  # (a store of a source no longer configured has only the versions kept)
        versions.snapshot(store)  # the current version joins the list if it is new
    items, next_cursor = offset_page(versions.versions(store), page.cursor, page.limit)
    return {"items": items, "next_cursor": next_cursor}


EXPORT_DOC = {
    200: {
        "description": "a download (Content-Disposition: attachment)",
        "content": {
            "text/markdown": {"schema": {"type": "string"}},
            "application/json": {"schema": ExportOut.json_schema()},
        },
    }
}


@router.get("/{store_id}/export", response=responses({}, 400, 404), openapi_extra={"responses": EXPORT_DOC})
def get_store_export(request: HttpRequest, store_id: str, query: Query[ExportIn]) -> HttpResponse:
    """The store's current content as a download: a JSON document, or Markdown to read (as the page's
    export links give it). 400 when the agent's file cannot be read."""
    found = export.export(find_store(store_id), query.format)
    response = HttpResponse(found.body, content_type=found.content_type)
    response["Content-Disposition"] = content_disposition_header(True, found.filename)
    return response


@router.get("/{store_id}/diff", response=responses({200: DiffOut}, 400, 404))
def get_diff(
    request: HttpRequest,
    store_id: str,
    frm: str | None = Query(None, alias="from", max_length=80, pattern=TEXT),
    to: str | None = Query(None, max_length=80, pattern=TEXT),
) -> dict:
    """From `from` (default: the version before `to`) to `to` (default: the current version)."""
    store = find_store(store_id)
    try:
        pair = versions.diff_pair(store, frm, to)
    except LookupError as exc:
        raise Http404(str(exc)) from None
    return diff_out(pair, store.title)


def queue_write(store: MemoryStore, action: str, params: dict, actor: Actor):
    """A write for the watcher of the store's host to carry out (the pages' and the API's)."""
    return outbox.submit(
        store.host,
        action,
        {**params, "store": store.key},
        actor,
        subject=f"store:{store.key}",
        target=f"{store.source}: {store.title} ({store.owner})",
        page=reverse("memory_admin:store_detail", args=[store.key]),
    )


@router.put(
    "/{store_id}/long-term",
    response=responses(
        {200: StoreDetailOut, 202: OutboxRequestOut, 409: ConflictOut | BusyOut}, 400, 403, 404
    ),
)
def update_long_term(request: HttpRequest, store_id: str, body: LongTermIn) -> Status | HttpResponse:
    """Replace the long-term text if the store is still at `base_version`, else 409 with a diff.

    MEMORY.md and other text files are rewritten atomically; a Bub zone gets a new version appended.
    A store on another host: its watcher writes it (as here when done within the wait, else 202).
    """
    actor = writer(request)
    store = find_store(store_id)
    if outbox.elsewhere(store.host):
        return api_answer(queue_write(store, "memory.long_term", body.model_dump(), actor))
    return _long_term(store, body, actor)


def _long_term(store: MemoryStore, body: LongTermIn, actor: Actor) -> Status:
    try:
        snap = writes.replace_long_term(store, body.content, body.base_version, actor)
    except StaleEdit:
        return Status(409, _conflict(store, body.content))
    return Status(200, _detail(store, snap, snap))


@router.post(
    "/{store_id}/prune",
    response=responses({200: PruneOut, 202: OutboxRequestOut, 409: ConflictOut | BusyOut}, 400, 403, 404),
)
def prune_store(request: HttpRequest, store_id: str, body: PruneIn) -> Status | HttpResponse:
    """Remove a Bub zone's notes older than `older_than_days`; a dry run says exactly which would go.

    Both need write scope (a write token, or the operator role): a dry run too, as the store page shows
    its prune preview to operators only. A read token or a viewer gets 403.

    A store on another host: its watcher prunes it (as here when done within the wait, else 202).
    """
    actor = writer(request)
    store = find_store(store_id)
    if outbox.elsewhere(store.host):
        return api_answer(queue_write(store, "memory.prune", body.model_dump(), actor))
    return _prune(store, body, actor)


def _prune(store: MemoryStore, body: PruneIn, actor: Actor) -> Status:
    removed = kind_of(store).prune_preview(store, body.older_than_days)
    snap = versions.snapshot(store)
    if body.dry_run or not removed:
        return Status(200, {"dry_run": body.dry_run, "removed": removed, "version": snap.version})
    try:
        after = writes.zone_write(
            store, actor, "prune", body.base_version or snap.version, days=body.older_than_days
        )
    except StaleEdit as stale:
        return Status(409, conflict(stale, stale.current_text))
    return Status(200, {"dry_run": False, "removed": removed, "version": after.version})


@handler("memory.long_term")
def carry_out_long_term(params: dict, actor: Actor) -> Result:
    """The outbox's long-term edit, on the store's host: the API's own answer."""
    answer = _long_term(find_store(params["store"]), LongTermIn(**_own(params)), actor)
    ok = answer.status_code == 200
    return Result.of(answer.status_code, StoreDetailOut.model_validate(answer.value) if ok else answer.value)


@handler("memory.prune")
def carry_out_prune(params: dict, actor: Actor) -> Result:
    """The outbox's prune, on the store's host: the API's own answer."""
    answer = _prune(find_store(params["store"]), PruneIn(**_own(params)), actor)
    ok = answer.status_code == 200
    return Result.of(answer.status_code, PruneOut.model_validate(answer.value) if ok else answer.value)


def _own(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != "store"}
