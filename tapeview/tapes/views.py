"""Tape pages: the session index, a tape's timeline, its context preview, one entry."""

from __future__ import annotations

from pathlib import Path

import orjson
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from tapeview.accounts.audit import Actor
from tapeview.accounts.roles import role_required
from tapeview.sources import TapeBusy, TapeNotFound, reader

from . import context, discovery, handoff, health, index, timeline
from .forms import HandoffForm, TapeListForm, TimelineForm
from .models import EntryRow, Tape

LIST_PAGE_SIZE = 50


def tape_list(request: HttpRequest) -> HttpResponse:
    """Every session of every source. Template `tapeview/tape_list.html`, partial `#rows`."""
    discovery.sync_if_stale()
    form = TapeListForm(request.GET)
    form.is_valid()
    tapes = Tape.objects.filter(owner__isnull=True)
    q, source = form.cleaned_data.get("q"), form.cleaned_data.get("source")
    if q:
        tapes = tapes.filter(Q(label__icontains=q) | Q(name__icontains=q) | Q(last_anchor__icontains=q))
    if source:
        tapes = tapes.filter(source=source)
    pages = Paginator(tapes.order_by(*form.ordering()), LIST_PAGE_SIZE)
    ctx = {
        "form": form,
        "page": pages.get_page(form.cleaned_data.get("page")),
        "sort": form.current_sort(),
        "columns": form.columns(),
        "sources": Tape.objects.values_list("source", flat=True).distinct().order_by("source"),
        "total": Tape.objects.count(),
    }
    template = "tapes/tape_list.html" + ("#rows" if request.htmx else "")
    return render(request, template, ctx)


def _tape(key: str) -> Tape:
    tape = get_object_or_404(Tape, key=key)
    index.refresh(tape)
    if tape.problem == "file missing":
        raise Http404("this tape's file is gone")
    return tape


def tape_detail(request: HttpRequest, key: str) -> HttpResponse:
    """One tape's timeline. Template `tapeview/tape_detail.html`, partial `#entries`."""
    tape = _tape(key)
    form = TimelineForm(request.GET)
    form.is_valid()
    try:
        page = timeline.page(tape, **form.where())
    except TapeNotFound:
        raise Http404("this tape's file is gone") from None
    before_first, phases = timeline.phases(tape)
    ctx = {
        "tape": tape,
        "page": page,
        "phases": phases,
        "before_first": before_first,
        "attachments": tape.attachments.order_by("role", "name"),
        "has_memory": _has_memory(tape),
        "jump": form.cleaned_data.get("at"),
    }
    template = "tapes/tape_detail.html" + ("#entries" if request.htmx else "")
    return render(request, template, ctx)


def _has_memory(tape: Tape) -> bool:
    tapes = [tape, *tape.attachments.filter(role="sidecar")]
    return EntryRow.objects.filter(tape__in=tapes, kind="anchor", name="memory/seal").exists()


def tape_context(request: HttpRequest, key: str) -> HttpResponse:
    """What the model would see after an anchor. Template `tapeview/tape_context.html`."""
    tape = _tape(key)
    try:
        preview = context.preview(tape, request.GET.get("anchor") or None)
    except context.AnchorNotFound as exc:
        raise Http404(str(exc)) from None
    ctx = {"tape": tape, "preview": preview, "anchors": tape.anchor_rows.order_by("-pos")}
    return render(request, "tapes/tape_context.html", ctx)


def entry_detail(request: HttpRequest, key: str, pos: int) -> HttpResponse:
    """One entry in full. Template `tapeview/entry_detail.html`."""
    tape = _tape(key)
    row = get_object_or_404(EntryRow, tape=tape, pos=pos)
    entry = timeline.read_rows(tape, [row])[0]
    return render(request, "tapes/entry_detail.html", {"tape": tape, "row": row, "entry": entry})


def entry_raw(request: HttpRequest, key: str, pos: int) -> HttpResponse:
    """The entry's bytes exactly as they are in the file, streamed; a record of a JSON document as JSON."""
    tape = _tape(key)
    row = get_object_or_404(EntryRow, tape=tape, pos=pos)
    source = reader(tape.kind)
    if not tape.append_only or not hasattr(source, "read_raw"):
        entry = timeline.read_rows(tape, [row])[0]
        return HttpResponse(orjson.dumps(entry.payload), content_type="application/json")
    chunks = source.read_raw(Path(tape.path), row.offset, row.length)
    response = StreamingHttpResponse(chunks, content_type="text/plain; charset=utf-8")
    response["Content-Length"] = str(row.length)
    return response


def source_list(request: HttpRequest) -> HttpResponse:
    """Every configured source, its detected kind and health. Template `tapeview/source_list.html`."""
    discovery.sync_if_stale()
    return render(request, "tapes/source_list.html", {"sources": health.source_health()})


@role_required("operator")
def tape_handoff(request: HttpRequest, key: str) -> HttpResponse:
    """Write a handoff after showing what the agent's next context would be.

    Template `tapeview/tape_handoff.html`; 409 with Retry-After when the tape is mid-turn.
    """
    tape = _tape(key)
    form = HandoffForm(request.POST or None)
    refusal = handoff.refusal(tape)
    ctx = {"tape": tape, "form": form, "refusal": refusal}
    if not refusal:
        ctx["now"] = context.preview(tape)
        ctx["idle"], ctx["idle_reason"] = handoff.idle_state(tape)
    if request.method == "POST" and not refusal and form.is_valid():
        try:
            written = handoff.write(
                tape, form.cleaned_data["name"], Actor.of(request.user), summary=form.cleaned_data["summary"]
            )
        except TapeBusy as busy:
            ctx["busy"] = busy
            response = render(request, "tapes/tape_handoff.html", ctx, status=409)
            response["Retry-After"] = str(max(1, round(busy.retry_after)))
            return response
        except handoff.HandoffRefused as exc:
            form.add_error("name", str(exc))
        else:
            first, last = written[0], written[-1]
            messages.info(
                request, f"Handoff {first['payload']['name']!r} written as ids {first['id']}–{last['id']}."
            )
            return redirect(f"{reverse('tapes:tape_detail', args=[tape.key])}?end=1")
    return render(
        request,
        "tapes/tape_handoff.html",
        ctx,
        status=400 if refusal and request.method == "POST" else 200,
    )
