"""Review pages: every review with its filters, one entry's review history, and recording a review."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from tapeview.accounts.audit import Actor
from tapeview.accounts.roles import role_required
from tapeview.sources import Entry, TapeNotFound
from tapeview.tapes import lookup, timeline
from tapeview.tapes.models import Tape

from . import ledger
from .forms import ReviewForm, ReviewListForm

PAGE_SIZE = 50


@vary_on_headers("HX-Request")
def review_list(request: HttpRequest) -> HttpResponse:
    """Reviews of every tape, and the sessions they are of, filtered by label, score, verdict and tape.

    Template `reviews/review_list.html`, partial `#results`.
    """
    form = ReviewListForm(request.GET)
    form.is_valid()
    ledger.refresh_index()
    found = ledger.find(**form.filters())
    page = Paginator(found.linked(), PAGE_SIZE).get_page(form.cleaned_data.get("page"))
    reviews = ledger.mark(page.object_list)
    tapes = Tape.objects.in_bulk({r.tape_key for r in reviews}, field_name="key")
    ctx = {
        "form": form,
        "page": page,
        "rows": [(r, tapes.get(r.tape_key)) for r in reviews],
        "sessions": ledger.reviewed_tapes(found),
        "scores": range(1, 6),
    }
    template = "reviews/review_list.html" + ("#results" if request.htmx else "")
    return render(request, template, ctx)


def review_history(request: HttpRequest, key: str, pos: int) -> HttpResponse:
    """Every review of one entry, newest first: superseded ones struck through, orphaned ones marked.

    Template `reviews/review_history.html`; also of a tape gone from the index, if it has reviews.
    """
    return _history(request, key, pos, form=None)


@require_POST
@role_required("operator")
def review_create(request: HttpRequest, key: str, pos: int) -> HttpResponse:
    """Record a review (a correction supersedes one); back to the timeline or the history page."""
    tape = lookup.find_tape(key)
    form = ReviewForm(request.POST, current=list(ledger.find(tape=key, pos=pos).current()))
    status = 400
    if form.is_valid():
        try:
            ledger.add(tape, pos, Actor.of(request.user).name, **form.review())
        except TapeNotFound as gone:
            raise Http404(gone.detail) from None
        except ledger.ReviewRefused as exc:
            form.add_error(None, str(exc))
        except ledger.ReviewConflict as exc:
            form.add_error(None, str(exc))
            status = 409
        else:
            messages.info(request, f"Review of #{pos} recorded.")
            if form.cleaned_data.get("back") == "conversation":
                cursor = form.cleaned_data.get("cursor")
                query = f"?cursor={cursor}" if cursor else ""
                return redirect(f"{reverse('tapes:tape_conversation', args=[key])}{query}#turn-{pos}")
            if form.cleaned_data.get("back") == "timeline":
                return redirect(f"{reverse('tapes:tape_detail', args=[key])}?at={pos}#e{pos}")
            return redirect("reviews:review_history", key, pos)
    return _history(request, key, pos, form=form, status=status)


def _history(
    request: HttpRequest, key: str, pos: int, form: ReviewForm | None, status: int = 200
) -> HttpResponse:
    if not lookup.is_key(key):
        raise Http404("no such tape")
    tape, entry = _entry(key, pos)
    reviews = ledger.mark(ledger.find(tape=key, pos=pos).linked())
    if tape is None and not reviews:
        raise Http404("no such tape")
    if form is None:
        form = ReviewForm(current=[r for r in reviews if r.current], initial={"back": "history"})
    ctx = {"tape": tape, "key": key, "pos": pos, "entry": entry, "reviews": reviews, "form": form}
    return render(request, "reviews/review_history.html", ctx, status=status)


def _entry(key: str, pos: int) -> tuple[Tape | None, Entry | None]:
    """The tape and its entry at `pos` as they are now; None for what is gone."""
    try:
        tape = lookup.find_tape(key)
    except lookup.NoSuchTape:
        return None, None
    try:
        return tape, timeline.read_rows(tape, [lookup.find_row(tape, pos)])[0]
    except (lookup.NoSuchEntry, TapeNotFound):
        return tape, None
