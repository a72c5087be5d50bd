"""Memory pages: every store, its content and versions, edits with conflicts, restore."""

from __future__ import annotations

from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_POST

from tapeview.accounts.audit import Actor, events_of
from tapeview.accounts.roles import role_required
from tapeview.outbox import queue as outbox
from tapeview.outbox.answers import result_of, waited
from tapeview.outbox.handlers import Result, handler
from tapeview.outbox.views import queued_page
from tapeview.sources import TapeBusy, TapeNotFound
from tapeview.tapes import discovery

from . import diff, export, past_pages, versions, writes
from .api import queue_write
from .api.schemas import conflict
from .blame import blames
from .catalog import refresh_stat, sync_stores
from .conflicts import Describe
from .forms import AsOfForm, DiffForm, StoreListForm, TextEditForm, VersionPageForm
from .kinds import kind_of
from .lookup import find_store, find_zone
from .models import MemoryStore
from .outcomes import saved, stale_page
from .stores.model import Snapshot, StaleEdit, StoreError, edit_problem, not_text_note
from .templatetags.memory import markdown


def store_list(request: HttpRequest) -> HttpResponse:
    """Every memory store of every source. Template `memory_admin/store_list.html`."""
    discovery.sync_if_stale()
    sync_stores()
    form = StoreListForm(request.GET)
    kind = form.cleaned_data["kind"] if form.is_valid() else ""
    stores = MemoryStore.objects.annotate(versions=Count("revisions")).order_by(
        "source", "kind", "owner", "title"
    )
    if kind:
        stores = stores.filter(kind__startswith=kind)
    kinds = MemoryStore.objects.values_list("kind", flat=True).distinct().order_by("kind")
    ctx = {"stores": stores, "kinds": kinds, "kind": kind, "total": MemoryStore.objects.count()}
    return render(request, "memory_admin/store_list.html", ctx)


def store_detail(request: HttpRequest, key: str) -> HttpResponse:
    """One store: its content, its versions and the changes made through Tapeview (with `?as_of=`
    or `?tape=`: the store as it was then, past_pages.store_as_of).

    Template `memory_admin/store_detail.html`: `store`, `adapter` (its kind), `snap`, `audit`,
    `versions` (newest first: a page of them, `?before=`) and `listed` (them, `more`: if older ones
    are not listed, `first`, and the `older`/`newer` pages),
    `filters` (the adapter's query form), then what the adapter adds for its partial; an unreadable
    store gets `problem` instead of `snap`.
    """
    store = find_store(key)
    if AsOfForm.asked(request.GET):
        return past_pages.store_as_of(request, store)
    adapter = kind_of(store)
    filters = adapter.filters(request.GET)
    filters.is_valid()  # a bad value is shown as the form's error; the page keeps its defaults
    pages = VersionPageForm(request.GET)
    before = pages.cleaned_data.get("before") if pages.is_valid() and adapter.lists_revisions else None
    refresh_stat(store)  # the header shows the file as it is now, whoever changed it
    ctx = {
        "store": store,
        "adapter": adapter,
        "filters": filters,
        "audit": events_of(f"store:{store.key}")[:50],
        "size": None if store.tape_id else store.size,  # a zone's own, once it is read
    }
    try:
        snap = versions.snapshot(store)
    except (StoreError, TapeNotFound) as exc:
        # The agent's file is corrupt, too deep to read, or gone (or another host's, not copied
        # here): say so, with what Tapeview kept of it.
        problem = exc.detail if isinstance(exc, TapeNotFound) else str(exc)
        listed = versions.page_list(store, before)
        ctx.update(listed=listed, versions=listed.choices, problem=problem)
        return render(request, "memory_admin/store_detail.html", ctx)
    ctx.update(adapter.page_context(store, snap, filters))
    listed = versions.page_list(store, before)  # after the snapshot: it keeps the current version
    # A file that is not text is shown, never rewritten; one too long to edit may still be restored.
    ctx.update(snap=snap, edits_text=adapter.takes_text(store) and not edit_problem(store.title, snap))
    ctx.update(restores=not snap.not_text and adapter.restores(store), blames=blames(snap))
    ctx.update(not_text=not_text_note(store.title, snap.not_text) if snap.not_text else "")
    ctx.update(size=adapter.size(store, snap))
    ctx.update(listed=listed, versions=listed.choices, restored=versions.restored(store, snap.version))
    return render(request, "memory_admin/store_detail.html", ctx)


@role_required("operator")
def store_edit(request: HttpRequest, key: str) -> HttpResponse:
    """Edit a text store; a stale edit gets a conflict page and nothing is written, as a text the
    store cannot take does (400: the form, with why and the text kept).

    Templates `memory_admin/store_edit.html` and `memory_admin/conflict.html`.
    """
    store = find_store(key)
    if not kind_of(store).takes_text(store):
        raise Http404("this store is not edited as text")
    snap = versions.snapshot(store)
    if why := edit_problem(store.title, snap):  # refused before a form is shown, GET or POST
        return refused(request, store, StoreError(why))
    form = TextEditForm(request.POST or None, initial={"text": snap.text, "base_version": snap.version})
    if request.method == "POST" and form.is_valid() and "preview" not in request.POST:
        text, base = form.cleaned_data["text"], form.cleaned_data["base_version"]
        return write_page(request, store, "save_text", base, mine=text, text=text)
    preview = form.data.get("text", snap.text) if request.method == "POST" else snap.text
    status = 400 if form.errors else 200  # the text refused, kept in the form with the reason
    ctx = {"store": store, "form": form, "preview": preview}
    return render(request, "memory_admin/store_edit.html", ctx, status=status)


@role_required("operator")
@require_POST
def store_preview(request: HttpRequest, key: str) -> HttpResponse:
    """The Markdown of the text being edited, rendered (an htmx fragment)."""
    find_store(key)
    return HttpResponse(markdown(request.POST.get("text", "")))


def store_diff(request: HttpRequest, key: str) -> HttpResponse:
    """Two versions compared (`?frm=&to=`), or the `only` one. Template `memory_admin/store_diff.html`
    (`lines`: the rows, or a diff.TooLarge saying how far two versions too large to compare differ)."""
    store, form = find_store(key), DiffForm(request.GET)
    form.is_valid()
    ctx: dict = {"store": store}
    try:
        pair = versions.diff_pair(store, form.cleaned_data.get("frm"), form.cleaned_data.get("to"))
    except LookupError as exc:
        raise Http404(str(exc)) from None
    except StoreError as exc:
        # The file cannot be read now, so there is no current version: the kept ones can still be picked.
        ctx.update(versions=versions.versions(store), problem=str(exc))
        return render(request, "memory_admin/store_diff.html", ctx, status=400)
    # Listed after diff_pair: reading the store keeps its current version, which a picker must offer.
    choices = kind_of(store).choices_near(store, (pair.frm, pair.to))
    if len(choices) == 1:
        return render(request, "memory_admin/store_diff.html", {**ctx, "only": choices[0]})
    unlisted = pair.frm is not None and all(c.version != pair.frm for c in choices)  # behind a cut list
    ctx.update(versions=choices, frm=pair.frm, frm_unlisted=unlisted, to=pair.to)
    ctx.update(lines=diff.rows(pair.old, pair.new))  # or diff.TooLarge, which the page says
    return render(request, "memory_admin/store_diff.html", ctx)


def store_export(request: HttpRequest, key: str, fmt: str) -> HttpResponse:
    """The store as it is now, as a download: a Markdown document (`fmt` "md") or JSON ("json").

    Template `memory_admin/unreadable.html` (400: `store`, `error`) when the agent's file cannot be read.
    """
    store = find_store(key)
    try:
        found = export.export(store, fmt)
    except StoreError as exc:
        ctx = {"store": store, "error": exc}
        return render(request, "memory_admin/unreadable.html", ctx, status=400)
    response = HttpResponse(found.body, content_type=found.content_type)
    response["Content-Disposition"] = content_disposition_header(True, found.filename)
    return response


def write_page(
    request: HttpRequest,
    store: MemoryStore,
    write: str,
    base: str,
    done: str = "",
    mine: str | None = None,
    change: Describe | None = None,
    **params,
) -> HttpResponse:
    """Run one write of a page and answer as the user expects: back to the store saying what it
    became, or why nothing was written (a conflict shows `mine`, or the write as `change` says it).
    A store on another host: its watcher runs the write."""
    actor = Actor.of(request.user)
    again = str(params.get("version", ""))
    if outbox.elsewhere(store.host):
        queued = queue_write(store, "memory.write", {"write": write, "params": params, "base": base}, actor)
        return _outcome_page(request, store, waited(queued), base, done, (mine, change), again)
    try:
        snap = _write(store, actor, write, base, params)
    except StaleEdit as stale:
        return stale_page(request, store, stale, base, done, again, mine, change)
    except TapeBusy as busy:
        return busy_page(request, store, busy)
    except StoreError as exc:
        return refused(request, store, exc)
    saved(request, snap, base, done, again)
    return redirect("memory_admin:store_detail", key=store.key)


def _write(store: MemoryStore, actor: Actor, write: str, base: str, params: dict) -> Snapshot:
    # The writes a page makes, by name: all the outbox may be asked to carry out for a page.
    if write not in ("save_text", "restore", "zone_write", "zone_move", "entry_write", "kv_write"):
        raise StoreError(f"no such write: {write}")
    try:
        return getattr(writes, write)(store=store, actor=actor, base_version=base, **params)
    except LookupError as exc:  # a version or an entry that is not there
        raise Http404(str(exc)) from None


@handler("memory.write")
def carry_out_write(params: dict, actor: Actor) -> Result:
    """The outbox's page write, on the store's host: the version written, or the conflict."""
    store = find_store(params["store"])
    try:
        snap = _write(store, actor, params["write"], params["base"], params["params"])
    except StaleEdit as stale:
        return Result.of(409, conflict(stale, params["params"].get("text", stale.current_text)))
    return Result.of(200, {"version": snap.version})


def _outcome_page(
    request: HttpRequest,
    store: MemoryStore,
    queued,
    base: str,
    done: str,
    yours: tuple[str | None, Describe | None],
    again: str = "",
) -> HttpResponse:
    """What the page says of a write another host carried out within the wait, as if made here
    (`yours`: the write's `mine` and `change`, for its conflict page)."""
    result = result_of(queued)
    body = result.body if result is not None and isinstance(result.body, dict) else {}
    if result is None or not body:
        return queued_page(request, queued)
    if result.ok:
        saved(request, Snapshot(body["version"], ""), base, done, again)
        return redirect("memory_admin:store_detail", key=store.key)
    if result.status == 409 and "current_version" in body:
        stale = StaleEdit(body["current_content"], body["current_version"])
        return stale_page(request, store, stale, base, done, again, *yours)
    if result.status == 409:
        return busy_page(request, store, TapeBusy(result.reason, body.get("retry_after", 2)))
    if result.status == 400:
        return refused(request, store, StoreError(result.reason))
    return queued_page(request, queued)  # the store gone on its host, a full disk: its panel says


def confirm_page(
    request: HttpRequest,
    store: MemoryStore,
    question: str,
    changes: list | diff.TooLarge | None = None,
    now: str = "",
) -> HttpResponse:
    """The question before a destructive write, with the same form to send again, confirmed (a page:
    no script's confirm()), and what it changes where known: a diff against the file at version `now`,
    which the answer is then written on top of (the page says so where the file changed meanwhile)."""
    sent = request.POST.get("base_version", "")
    fields = [(k, now if k == "base_version" and now else v) for k, v in request.POST.items()]
    fields = [(k, v) for k, v in fields if k not in ("csrfmiddlewaretoken", "confirmed")]
    ctx = {"store": store, "question": question, "fields": fields, "action": request.path, "changes": changes}
    ctx["changed_since"] = (sent, now) if now and sent and now != sent else None
    return render(request, "memory_admin/confirm.html", ctx)


def refused(request: HttpRequest, store: MemoryStore, error: Exception) -> HttpResponse:
    """400: the edit was refused by the agent's rules (or the file cannot be read); nothing was written."""
    return render(request, "memory_admin/refused.html", {"store": store, "error": error}, status=400)


def busy_page(request: HttpRequest, store: MemoryStore, busy: TapeBusy) -> HttpResponse:
    """409 with a retry hint: the agent is mid-turn, nothing was written."""
    ctx = {"store": store, "error": f"{busy} Nothing was written: try again in a few seconds.", "busy": True}
    response = render(request, "memory_admin/refused.html", ctx, status=409)
    response["Retry-After"] = str(max(1, round(busy.retry_after)))
    return response


def zone_of_tape(request: HttpRequest, key: str) -> HttpResponse:
    """The memory zone of a tape: the store page of that zone."""
    return redirect("memory_admin:store_detail", key=find_zone(key).key)
