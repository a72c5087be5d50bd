"""Queue pages: the queues with their progress, one queue's items, sending targets to a queue, and
working through a queue's items with the review form."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from tapeview.accounts.audit import Actor
from tapeview.accounts.roles import has_role, role_required
from tapeview.sources import Entry, TapeNotFound
from tapeview.tapes import lookup, timeline

from . import ledger, queues
from .forms import AssignForm, QueueForm, ReviewForm, SendForm
from .models import Queue, QueueItem

PAGE_SIZE = 50
TURN_SHOWN = 20  # entries of a turn shown on its item's page; the timeline has the rest


def queue_list(request: HttpRequest) -> HttpResponse:
    """Every queue with its progress, done of total and per reviewer. Template `reviews/queue_list.html`."""
    return _list(request, QueueForm(), status=200)


def _list(request: HttpRequest, form: QueueForm, status: int) -> HttpResponse:
    found = list(Queue.objects.order_by("name"))
    board = queues.progress(found)
    ctx = {"rows": [(q, board[q.pk]) for q in found], "form": form}
    return render(request, "reviews/queue_list.html", ctx, status=status)


@require_POST
@role_required("admin")
def queue_create(request: HttpRequest) -> HttpResponse:
    form = QueueForm(request.POST)
    if form.is_valid():
        try:
            queue = queues.create(
                form.cleaned_data["name"], form.cleaned_data["description"], Actor.of(request.user)
            )
        except queues.QueueRefused as exc:
            form.add_error("name", str(exc))
        else:
            messages.info(request, f"Queue “{queue.name}” made.")
            return redirect("reviews:queue_detail", queue.pk)
    return _list(request, form, status=400)


def queue_detail(request: HttpRequest, queue_id: int) -> HttpResponse:
    """A queue's items (done, gone, who reviews each), its progress, and for admins the assign form.

    Template `reviews/queue_detail.html`; `?reviewer=NAME` lists one reviewer's items ("" unassigned).
    """
    queue = queues.find_queue(queue_id)
    return _detail(request, queue, AssignForm(), status=200)


def _detail(request: HttpRequest, queue: Queue, form: AssignForm, status: int) -> HttpResponse:
    ledger.refresh_index()
    items = queues.with_state(queue.items.select_related("reviewer"))
    reviewer = request.GET.get("reviewer")
    if reviewer is not None and "\x00" in reviewer:
        items = items.none()  # no user name holds a NUL, and PostgreSQL refuses one in a query
    elif reviewer is not None:
        items = items.filter(reviewer__username=reviewer) if reviewer else items.filter(reviewer__isnull=True)
    page = Paginator(items.order_by("pk"), PAGE_SIZE).get_page(request.GET.get("page"))
    user = request.user if has_role(request.user, "operator") else None
    ctx = {
        "queue": queue,
        "progress": queues.progress([queue])[queue.pk],
        "page": page,
        "items": queues.mark_gone(page.object_list),
        "reviewer": reviewer,
        "form": form,
        "start": queues.next_open(queue, user),
    }
    return render(request, "reviews/queue_detail.html", ctx, status=status)


@require_POST
@role_required("admin")
def queue_assign(request: HttpRequest, queue_id: int) -> HttpResponse:
    queue = queues.find_queue(queue_id)
    form = AssignForm(request.POST)
    if form.is_valid():
        pk = form.cleaned_data["reviewer"]
        person = get_user_model().objects.filter(pk=pk).first() if pk else None
        try:
            n = queues.assign(queue, person, Actor.of(request.user), which=form.cleaned_data["which"])
        except queues.QueueRefused as exc:
            form.add_error("reviewer", str(exc))
        else:
            to = person.get_username() if person else "nobody"
            messages.info(request, f"{n} item{'s' if n != 1 else ''} assigned to {to}.")
            return redirect("reviews:queue_detail", queue.pk)
    return _detail(request, queue, form, status=400)


@require_POST
@role_required("admin")
def item_remove(request: HttpRequest, queue_id: int, item_id: int) -> HttpResponse:
    queue = queues.find_queue(queue_id)
    item = queues.find_item(queue, item_id)
    queues.remove(item, Actor.of(request.user))
    messages.info(request, "Item removed from the queue.")
    return redirect("reviews:queue_detail", queue.pk)


@require_POST
@role_required("admin")
def queue_delete(request: HttpRequest, queue_id: int) -> HttpResponse:
    """Remove a queue with its items; the reviews recorded through it stay."""
    queue = queues.find_queue(queue_id)
    queues.delete(queue, Actor.of(request.user))
    messages.info(request, f"Queue “{queue.name}” removed; its reviews stay.")
    return redirect("reviews:queue_list")


@role_required("operator")
def queue_send(request: HttpRequest) -> HttpResponse:
    """Send a target, or the sessions of a session index filter (`?query=`), to a queue.

    GET shows what would be sent and the form (template `reviews/queue_send.html`); POST adds them.
    """
    data = request.POST if request.method == "POST" else request.GET
    form = SendForm(data)
    form.is_valid()
    cleaned = form.cleaned_data
    status, targets, problem = 200, [], ""
    query = cleaned.get("query")
    bad = [name for name in ("tape", "span", "pos", "end") if name in form.errors]
    try:
        if bad:
            problem = f"Not a target that can be sent: check {', '.join(bad)}."
        elif cleaned.get("tape"):
            span = cleaned.get("span") or ("entry" if cleaned.get("pos") else "session")
            targets = [queues.target(cleaned["tape"], span, cleaned.get("pos"), cleaned.get("end"))]
            query = None
        elif query is not None and "query" in data:
            targets = queues.targets_of(query)
        else:
            problem = "Name what to send: an entry, a turn, a session, or a filter of the session index."
    except (queues.QueueRefused, lookup.NoSuchTape, lookup.NoSuchEntry) as exc:
        problem = str(exc)
    if problem:
        status = 400 if request.method == "POST" or data else 200
    elif request.method == "POST" and form.is_valid():
        pk = cleaned.get("reviewer")
        person = get_user_model().objects.filter(pk=pk).first() if pk else None
        queue = cleaned["queue"]
        try:
            added = queues.add(queue, targets, Actor.of(request.user), reviewer=person, query=query)
        except queues.QueueRefused as exc:
            problem, status = str(exc), 400
        else:
            skipped = f" ({added.skipped} in it already)" if added.skipped else ""
            messages.info(
                request,
                f"{added.added} item{'s' if added.added != 1 else ''} sent to “{queue.name}”{skipped}.",
            )
            return redirect("reviews:queue_detail", queue.pk)
    elif request.method == "POST":
        status = 400
    ctx = {
        "form": form,
        "targets": targets[:PAGE_SIZE],
        "count": len(targets),
        "problem": problem,
        "query": query,
    }
    ctx["has_queues"] = Queue.objects.exists()
    return render(request, "reviews/queue_send.html", ctx, status=status)


def item_detail(request: HttpRequest, queue_id: int, item_id: int) -> HttpResponse:
    """One item of a queue to review: its entries as they are now (or that they are gone), its
    reviews, the review form, and the previous and next items (`?mine=1`: of those assigned to
    the signed-in person). Template `reviews/queue_item.html`."""
    queue = queues.find_queue(queue_id)
    item = queues.find_item(queue, item_id)
    return _item(request, queue, item, ReviewForm(current=_current(item)), status=200)


def _current(item: QueueItem) -> list:
    if item.pos is None:
        return []
    return [
        r for r in ledger.find(tape=item.tape_key, pos=item.pos).linked().current() if r.span == item.span
    ]


def _item(request: HttpRequest, queue: Queue, item: QueueItem, form: ReviewForm, status: int) -> HttpResponse:
    ledger.refresh_index()
    queues.mark_gone([item])
    mine = request.GET.get("mine") == "1" or request.POST.get("mine") == "1"
    before, after = queues.neighbours(item, request.user if mine else None)
    entries, problem = _entries(item)
    reviews = (
        ledger.find(tape=item.tape_key, pos=item.pos)
        if item.pos is not None
        else ledger.find(tape=item.tape_key)
    )
    ctx = {
        "queue": queue,
        "item": item,
        "place": queue.items.filter(pk__lte=item.pk).count(),
        "total": queue.items.count(),
        "before": before,
        "after": after,
        "mine": mine,
        "entries": entries,
        "problem": problem,
        "reviews": ledger.mark(reviews.linked()[:20]),
        "form": form,
    }
    return render(request, "reviews/queue_item.html", ctx, status=status)


def _entries(item: QueueItem) -> tuple[list[Entry], str]:
    """The item's entries as they are now, and what is gone, in words ("" when nothing is)."""
    if item.tape is None:
        return [], "This tape is not in the index any more, or its file is gone."
    if item.pos is None:
        return [], ""
    last = min(item.end or item.pos, item.pos + TURN_SHOWN - 1)
    try:
        rows = [lookup.find_row(item.tape, p) for p in range(item.pos, last + 1)]
        return timeline.read_rows(item.tape, rows), ""
    except lookup.NoSuchEntry:
        return [], f"This tape has no entry #{item.pos}{f'–#{item.end}' if item.span == 'turn' else ''} now."
    except (TapeNotFound, OSError):
        return [], "This tape's file is gone or cannot be read."


def _at(value: str | None) -> int:
    """The entry a session's review is recorded at: the one given, else its first."""
    try:
        return max(1, min(int(value or 1), lookup.MAX_POS))
    except ValueError:
        return 1


@require_POST
@role_required("operator")
def item_review(request: HttpRequest, queue_id: int, item_id: int) -> HttpResponse:
    """Record a review of the item's target, then go on to the next open item (or back to the queue)."""
    queue = queues.find_queue(queue_id)
    item = queues.find_item(queue, item_id)
    queues.mark_gone([item])
    form = ReviewForm(request.POST, current=_current(item))
    status = 400
    if item.gone:
        form.is_valid()
        form.add_error(None, "This item is gone: nothing is left to review.")
    elif form.is_valid():
        review = form.review()
        pos = item.pos if item.pos is not None else _at(request.POST.get("at"))
        if item.pos is not None:
            review.update(span=item.span, end=item.end if item.span == "turn" else None)
        try:
            ledger.add(item.tape, pos, Actor.of(request.user).name, **review)
        except (TapeNotFound, lookup.NoSuchEntry) as exc:
            form.add_error(None, str(exc))
        except ledger.ReviewRefused as exc:
            form.add_error(None, str(exc))
        except ledger.ReviewConflict as exc:
            form.add_error(None, str(exc))
            status = 409
        else:
            messages.info(request, f"Review of item {queue.items.filter(pk__lte=item.pk).count()} recorded.")
            mine = request.POST.get("mine") == "1"
            following = queues.next_open(queue, request.user, after=item.pk)
            if following is None:
                messages.info(request, "No open item is left after this one.")
                return redirect("reviews:queue_detail", queue.pk)
            url = reverse("reviews:item_detail", args=[queue.pk, following])
            return redirect(f"{url}?mine=1" if mine else url)
    return _item(request, queue, item, form, status=status)
