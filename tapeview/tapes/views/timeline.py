"""One tape's pages: the timeline, its phases, lineage, context preview, one entry, exports."""

from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header
from django.views.decorators.vary import vary_on_headers

from tapeview.sources import TapeNotFound

from .. import budget, context, export, lineage, lookup, phases, raw, timeline
from ..api.cursor import BadCursor, decode, encode
from ..forms import (
    ContextForm,
    ExportForm,
    LineageForm,
    PhaseSortForm,
    TimelineForm,
)
from ..models import EntryRow, Tape

PHASE_ROWS = 100
LINEAGE_PAGE_SIZE = 100
FILE_GONE = "this tape's file is gone"


@vary_on_headers("HX-Request", "HX-Target")
def tape_detail(request: HttpRequest, key: str) -> HttpResponse:
    """One tape's timeline, its phase table and context budget. Template `tapeview/tape_detail.html`,
    partial `#entries`; the phase table alone (`tapes/_phase_table.html`) for htmx sorting it."""
    tape = lookup.find_tape(key)
    if request.htmx and request.htmx.target == "phase-table":
        return render(request, "tapes/_phase_table.html", {"tape": tape, **_phase_table(request, tape)})
    form = TimelineForm(request.GET)
    form.is_valid()
    try:
        page = timeline.page(tape, **form.where())
    except TapeNotFound:
        raise Http404(FILE_GONE) from None
    only, jump = form.only(), form.cleaned_data.get("at")
    anchors = [i.entry.pos for i in page.items if i.entry.is_anchor]
    ctx = {
        "tape": tape,
        "page": page,
        "attachments": tape.attachments.order_by("role", "name"),
        "has_memory": _has_memory(tape),
        "jump": jump,
        "only": only,
        "narrow": f"{only}=1&" if only else "",  # what the pager's links keep
        "error_steps": timeline.error_steps(tape, at=jump, first=page.first_pos) if tape.errors else None,
        "segment_ends": timeline.anchor_ends(tape, anchors),
    }
    if request.htmx:
        return render(request, "tapes/tape_detail.html#entries", ctx)
    try:
        ctx["budget"] = budget.measure(tape)
    except TapeNotFound:
        raise Http404(FILE_GONE) from None
    return render(request, "tapes/tape_detail.html", {**ctx, **_phase_table(request, tape)})


def _phase_table(request: HttpRequest, tape: Tape) -> dict:
    form = PhaseSortForm(request.GET)
    rows = phases.ranked(tape, form.current_sort(), PHASE_ROWS)
    return {
        "phase_rows": rows,
        "phase_columns": form.columns(),
        "phase_total": phases.count(tape),
        "tokens_known": any(p.tokens is not None for p in rows),
        "usage_note": phases.USAGE_NOTES.get(tape.kind, ""),
    }


def tape_lineage(request: HttpRequest, key: str) -> HttpResponse:
    """The chain of a session's handoffs, archives first, each state diffed with the one before.

    Template `tapeview/tape_lineage.html`.
    """
    tape = lookup.find_tape(key)
    form = LineageForm(request.GET)
    cursor = form.cleaned_data.get("cursor") if form.is_valid() else None
    try:
        after = decode(cursor, {"t": int, "pos": int}) if cursor else None
        found, more = lineage.links(tape, (after["t"], after["pos"]) if after else None, LINEAGE_PAGE_SIZE)
    except BadCursor:
        raise Http404("no such page of this lineage") from None
    except TapeNotFound:
        raise Http404(FILE_GONE) from None
    last = found[-1] if found else None
    ctx = {
        "tape": tape,
        "links": found,
        "next_cursor": encode({"t": last.place, "pos": last.anchor.pos}) if more and last else None,
    }
    return render(request, "tapes/tape_lineage.html", ctx)


def _has_memory(tape: Tape) -> bool:
    tapes = [tape, *tape.attachments.filter(role="sidecar")]
    return EntryRow.objects.filter(tape__in=tapes, kind="anchor", name="memory/seal").exists()


def tape_context(request: HttpRequest, key: str) -> HttpResponse:
    """What the model would see after an anchor (`?anchor=`). Template `tapeview/tape_context.html`."""
    tape = lookup.find_tape(key)
    form = ContextForm(request.GET)
    if not form.is_valid():
        # Too long or with a NUL: no anchor is named so.
        raise Http404("no anchor of that name on this tape")
    try:
        preview = context.preview(tape, form.anchor_ref())
    except context.AnchorNotFound as exc:
        raise Http404(str(exc)) from None
    ctx = {"tape": tape, "preview": preview, "anchors": tape.anchor_rows.order_by("-pos")}
    return render(request, "tapes/tape_context.html", ctx)


def entry_detail(request: HttpRequest, key: str, pos: int) -> HttpResponse:
    """One entry in full. Template `tapeview/entry_detail.html`."""
    tape = lookup.find_tape(key)
    row = lookup.find_row(tape, pos)
    try:
        entry = timeline.read_rows(tape, [row])[0]
    except TapeNotFound:
        raise Http404(FILE_GONE) from None
    return render(request, "tapes/entry_detail.html", {"tape": tape, "row": row, "entry": entry})


def entry_raw(request: HttpRequest, key: str, pos: int) -> HttpResponse:
    """The entry as the agent wrote it, as text: the line's bytes streamed, or a record as JSON."""
    tape = lookup.find_tape(key)
    try:
        entry = raw.read(tape, lookup.find_row(tape, pos))
    except TapeNotFound:
        raise Http404(FILE_GONE) from None
    response = StreamingHttpResponse(entry.chunks, content_type=entry.content_type)
    response["Content-Length"] = str(entry.length)
    return response


def tape_export(request: HttpRequest, key: str, fmt: str) -> StreamingHttpResponse:
    """The tape, or the segment between the anchors at `?from=` and `?to=`, as a download:
    its lines as JSONL (`fmt` "jsonl") or a Markdown transcript ("md")."""
    tape = lookup.find_tape(key)
    form = ExportForm(request.GET)
    if not form.is_valid():
        raise BadRequest("from and to are the positions of anchors")
    try:
        found = export.export(tape, fmt, form.cleaned_data["start"], form.cleaned_data["stop"])
    except context.AnchorNotFound as exc:
        raise Http404(str(exc)) from None
    except export.BadSegment as exc:
        raise BadRequest(str(exc)) from None
    except TapeNotFound:
        raise Http404(FILE_GONE) from None
    response = StreamingHttpResponse(found.chunks, content_type=found.content_type)
    response["Content-Disposition"] = content_disposition_header(True, found.filename)
    return response
