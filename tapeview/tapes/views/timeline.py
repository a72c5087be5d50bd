"""One tape's pages: the timeline, its phases, lineage, context preview, one entry, exports."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import replace
from urllib.parse import urlsplit

from django.core.cache import cache
from django.core.exceptions import BadRequest
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import content_disposition_header, urlencode
from django.views.decorators.vary import vary_on_headers

from .. import budget, context, export, handoff, live, lookup, pictures, raw, timeline, turn_state
from ..forms import ContextForm, TimelineForm
from ..models import Anchor, Tape
from .cards import Cards
from .phase_table import PHASE_ROWS, phase_table

KEPT_SECONDS = 600  # as the pictures: what is kept changes only when the tape's index does


@vary_on_headers("HX-Request", "HX-Target")
def tape_detail(request: HttpRequest, key: str) -> HttpResponse:
    """One tape's timeline, its phase table and context budget. Template `tapes/tape_detail.html`,
    partial `#entries`; the phase table alone (`tapes/_phase_table.html`) for htmx sorting it.

    `?time=` jumps to the first entry at or after a moment, as `?at=` does to a position."""
    tape = lookup.find_tape(key)
    if request.htmx and request.htmx.target == "phase-table":
        return render(request, "tapes/_phase_table.html", {"tape": tape, **phase_table(request, tape)})
    clean = _clean_query(request)
    if clean is not None and not request.htmx:
        return redirect(f"{request.path}?{clean}" if clean else request.path)
    form = TimelineForm(request.GET)
    form.is_valid()
    where, only, jump = form.where(), form.only(), form.cleaned_data.get("at")
    when = form.cleaned_data.get("time") if jump is None else None
    if when is not None:
        jump = timeline.first_at(tape, when)
        narrow = {"only": only} if only else {}
        where = {"at": jump, **narrow} if jump is not None else {"end": True, **narrow}
    page, worked = _timeline(tape, where, jump)
    place = (sorted(where.items()), jump)
    ctx = {
        **_entries(tape, page, place, jump, only, worked["segment_ends"], _timeline_key(tape, place)),
        "jump_at": form.cleaned_data.get("at"),
        "jump_time": when,
        "time_missed": when is not None and jump is None,  # the tape ends before that moment
        "narrow": f"{only}=1&" if only else "",  # what the pager's links keep
        "error_steps": worked["error_steps"],
        "error_after_page": worked["error_after"],  # where the key `e` goes from this page's end
        # Only the last page of the whole tape follows the file as the agent writes it.
        "live": not page.has_newer and not only,
        # Where its poller follows from: past the end (`?after=` beyond it), the tape's last entry.
        "live_after": page.last_pos
        if page.last_pos is not None
        else min(where.get("after") or 0, tape.next_pos - 1),
        "live_empty": not page.items,  # no pagers yet: its poller asks for them with the first entries
        "page_first": page.first_pos,  # its poller says where the page starts: it takes a page's worth
    }
    if request.htmx:
        response = _render(request, "tapes/tape_detail.html#entries", ctx)
        if clean is not None:  # the address the jump form's page is pushed as
            response["HX-Push-Url"] = f"{request.path}?{clean}" if clean else request.path
        return response
    ctx["attachments"] = attachments = list(tape.attachments.order_by("role", "name"))
    ctx["has_memory"] = _has_memory(tape, attachments)
    ctx["budget"] = budget.measure(tape, page.index)
    ctx["mid_turn"] = turn_state.mid_turn(tape, page.index)  # the header's "Hand off…" waits, as the budget's
    ctx["handoff_offered"] = not handoff.refusal(tape)
    return _render(request, "tapes/tape_detail.html", {**ctx, **phase_table(request, tape)})


def _clean_query(request: HttpRequest) -> str | None:
    """The query without its empty parameters (the jump form sends both fields), each name once
    (its last value), or None when it is clean already."""
    lists = list(request.GET.lists())
    if all(len(values) == 1 and values[0] != "" for _, values in lists):
        return None
    return urlencode({name: values[-1] for name, values in lists if values[-1] != ""})


def _render(request: HttpRequest, template: str, ctx: dict) -> HttpResponse:
    """The page, and the entry cards it drew for the first time kept for the next reader."""
    response = render(request, template, ctx)
    ctx["cards"].keep()
    return response


def tape_tail(request: HttpRequest, key: str) -> HttpResponse:
    """What the agent wrote after the entry at `?after=`, for the live end of the timeline:
    partial `tapes/tape_detail.html#live` (the new entries and the next poller), or 204 while
    the file is still the `?seen=` bytes the reader has."""
    tape = lookup.find_tape(key)
    form = live.TailForm(request.GET)
    form.is_valid()
    after, seen, empty, first = (form.cleaned_data.get(k) for k in ("after", "seen", "empty", "first"))
    if after is None:
        problem = " ".join(form.errors.get("after", ["It is missing."]))
        raise BadRequest(f"?after= is the position of the last entry shown, a whole number: {problem}")
    if seen is not None and tape.size == seen:
        return HttpResponse(status=204)
    appended = timeline.page(tape, after=after)
    # What was appended can move the budget (a reported prompt, an anchor): sent again out of band.
    moved = budget.moved_by(tape, [item.entry for item in appended.items])
    measured = budget.measure(tape, appended.index) if moved else None
    # The reader's page takes them up to a page of entries; past that, it says how many are newer.
    fit = live.fit(tape, appended, first, after)
    page = fit.page
    ctx = {
        **_entries(tape, page, ("after", after), None, ""),
        "after": page.last_pos or after,
        "page_first": fit.first,
        "newer": fit.newer,
        "pager": fit.pager or page,
        # A shorter file was replaced or cut: positions may name other entries now; stop following.
        "replaced": seen is not None and tape.size < seen,
        "budget": measured,
        # With the budget (what moves it moves this too), the header's "Hand off…": one row read.
        "mid_turn": turn_state.mid_turn(tape, page.index) if moved else False,
        "handoff_offered": not handoff.refusal(tape),
        # The reader's page showed no entries: with the first, its pagers (and no "no entries" note).
        "first_entries": empty and bool(page.items),
        "live_empty": empty and not page.items,
        "steps": form.cleaned_data.get("steps"),  # its "only errors (N)", counted from the tape's row
    }
    if appended.items and tape.phase_count < PHASE_ROWS:
        # The phase the tape ends in grew (or a new one began): the table again, from the anchor rows.
        # Past a page of phases the table shows the first ones: a reload shows the newest.
        ctx.update(phase_table(request, tape, _page_query(request)))
    return _render(request, "tapes/tape_detail.html#live", ctx)


def _page_query(request: HttpRequest) -> QueryDict:
    """The query of the page a live end polls from (htmx says its URL), with the phase table's order
    it sent: what the phase table's links keep."""
    url = request.htmx.current_url if request.htmx else None
    query = QueryDict(urlsplit(url).query if url else "", mutable=True)
    query.pop("psort", None)
    if request.GET.get("psort"):
        query["psort"] = request.GET["psort"]
    return query


def _timeline(tape: Tape, where: dict, jump: int | None) -> tuple[timeline.Page, dict]:
    """A page of the timeline and what is worked out from it (where its anchors' segments end, the
    errors around it), kept until the tape's index changes: a page asked again reads nothing.

    The page kept has no snapshot of the index (`index`): the page read now has one."""
    key = _timeline_key(tape, (sorted(where.items()), jump))
    found = cache.get(key)
    if found is not None:
        return found
    page = timeline.page(tape, **where)
    worked = {
        "segment_ends": timeline.anchor_ends(tape, timeline.anchors_of(page), page.index),
        "error_steps": _error_steps(tape, page, jump),
        "error_after": _error_after(tape, page),
    }
    with suppress(RecursionError):  # an entry nested too deeply to pickle: the page is not kept
        cache.set(key, (replace(page, index=None), worked), KEPT_SECONDS)
    return page, worked


def _timeline_key(tape: Tape, place: tuple) -> str:
    return pictures.state_key("timeline", tape, place)


def _error_steps(tape: Tape, page: timeline.Page, jump: int | None) -> tuple[int | None, int | None] | None:
    if not tape.errors:
        return None
    return timeline.error_steps(tape, at=jump, first=page.first_pos, index=page.index)


def _error_after(tape: Tape, page: timeline.Page) -> int | None:
    if not tape.errors or not page.has_newer or page.last_pos is None:
        return None
    found = timeline.find_rows(tape, after=page.last_pos, errors=True, limit=1, index=page.index)
    return found[0].pos if found else None


def _entries(
    tape: Tape,
    page: timeline.Page,
    place: tuple,
    jump: int | None,
    only: str,
    segment_ends: dict | None = None,
    state: str | None = None,
) -> dict:
    """What the templates of entries need besides the page; `place` is where the page was asked
    for (its cards are kept by it), `state` names the page as drawn from this state of the index."""
    if segment_ends is None:
        segment_ends = timeline.anchor_ends(tape, timeline.anchors_of(page), page.index)
    urls = _urls(tape)
    return {
        "tape": tape,
        "page": page,
        "jump": jump,
        "only": only,
        "segment_ends": segment_ends,
        "urls": urls,
        "cards": Cards(tape, place, jump, only, segment_ends, urls, state),
    }


def _urls(tape: Tape) -> dict[str, str]:
    """The links every entry card makes, reversed once a page (the card adds its position)."""
    entry = reverse("tapes:entry_detail", args=(tape.key, 0))
    return {
        "entry": entry.removesuffix("0/"),
        "timeline": reverse("tapes:tape_detail", args=(tape.key,)),
        "context": reverse("tapes:tape_context", args=(tape.key,)),
        "jsonl": reverse("tapes:tape_export", args=(tape.key, "jsonl")),
        "md": reverse("tapes:tape_export", args=(tape.key, "md")),
    }


def _has_memory(tape: Tape, attachments: list[Tape]) -> bool:
    """Whether the tape or a sidecar of it seals a memory zone; kept until one of them changes."""
    mine = Q(tape=tape) | Q(tape__owner=tape, tape__role="sidecar")
    sidecars = tuple(
        (a.pk, a.path, a.next_pos, a.indexed_offset, a.size, a.mtime_ns)
        for a in attachments
        if a.role == "sidecar"
    )
    seals = Anchor.objects.filter(mine, name="memory/seal")
    return pictures.cached("has-memory", tape, seals.exists, sidecars)


@vary_on_headers("HX-Request")
def tape_context(request: HttpRequest, key: str) -> HttpResponse:
    """What the model would see after an anchor (`?anchor=`): the totals of the whole context and
    one page of its messages (`?after=`, `?before=`, `?end=1`, as the timeline pages). Template
    `tapes/tape_context.html`; partial `#messages` (the page alone) for htmx."""
    tape = lookup.find_tape(key)
    form = ContextForm(request.GET)
    if form.bad_anchor():
        raise Http404("no anchor of that name on this tape")
    try:
        found = context.page(tape, form.anchor_ref(), **form.where())
    except context.AnchorNotFound as exc:
        raise Http404(str(exc)) from None
    ref = form.anchor_ref()
    ctx = {
        "tape": tape,
        "preview": found,
        "totals": found.totals,
        "anchors": tape.anchor_rows.order_by("-pos"),
        # What the pager's links keep: the anchor asked for (not the default, which moves on).
        "narrow": f"{urlencode({'anchor': ref})}&" if ref else "",
        "page_entries": context.PAGE_ENTRIES,
        "exact_rows": context.EXACT_ROWS,
    }
    template = "tapes/tape_context.html"
    return render(request, f"{template}#messages" if request.htmx else template, ctx)


def entry_detail(request: HttpRequest, key: str, pos: int) -> HttpResponse:
    """One entry in full. Template `tapes/entry_detail.html`."""
    tape = lookup.find_tape(key)
    row = lookup.find_row(tape, pos)
    entry = timeline.read_rows(tape, [row])[0]
    return render(request, "tapes/entry_detail.html", {"tape": tape, "row": row, "entry": entry})


def entry_raw(request: HttpRequest, key: str, pos: int) -> HttpResponse:
    """The entry as the agent wrote it, as text: the line's bytes streamed, or a record as JSON."""
    tape = lookup.find_tape(key)
    entry = raw.read(tape, lookup.find_row(tape, pos))
    response = StreamingHttpResponse(entry.chunks, content_type=entry.content_type)
    response["Content-Length"] = str(entry.length)
    return response


def tape_export(request: HttpRequest, key: str, fmt: str) -> HttpResponse:
    """The tape, or the segment between the anchors at `?from=` and `?to=` (each a position or a
    name), as a download: its lines as JSONL (`fmt` "jsonl") or a Markdown transcript ("md").
    A segment it cannot give: `tapes/tape_export_error.html` with `tape`, `fmt` and `problem`."""
    tape = lookup.find_tape(key)
    try:
        found = export.export(tape, fmt, request.GET.get("from"), request.GET.get("to"))
    except (context.AnchorNotFound, export.BadSegment) as exc:
        status = 404 if isinstance(exc, LookupError) else 400
        ctx = {"tape": tape, "fmt": fmt, "problem": str(exc)}
        return render(request, "tapes/tape_export_error.html", ctx, status=status)
    response = StreamingHttpResponse(found.chunks, content_type=found.content_type)
    response["Content-Disposition"] = content_disposition_header(True, found.filename)
    return response
