"""The session index, its saved views, and the sources page."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import cached_property
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from .. import discovery, expression, health, listing, seek
from ..forms import PICKABLE, RANGES, SORTS, TapeListForm
from ..models import SavedView, Tape

LIST_PAGE_SIZE = 50
LIVE_SECONDS = 2  # how often the index's rows ask for what changed (hx-trigger on #rows)


class BoundedPaginator(Paginator):
    """Pages of a list counted up to listing.BOUND rows: past it the pager says "more than" and
    stops at the bound's last page, where a full count would read every tape of a fleet."""

    @cached_property
    def tally(self) -> listing.Tally:
        return listing.bounded_count(self.object_list)

    @cached_property
    def count(self) -> int:
        return self.tally.n


class SavedViewForm(forms.Form):
    """A name for the index's filter and sort; `query` is the index's query string, validated again."""

    name = forms.CharField(max_length=100)
    query = forms.CharField(required=False, max_length=4000)


def known_query(query: str) -> str:
    """Only the index's known parameters of a query string, as its form reads them, never as sent."""
    listed = TapeListForm(QueryDict(query))
    listed.is_valid()  # a parameter that does not validate is left out
    return listed.saved_query()


# The same URL answers htmx with a partial and a browser with the page: caches must keep both.
@vary_on_headers("HX-Request")
def tape_list(request: HttpRequest) -> HttpResponse:
    """Every session of every source. Template `tapes/tape_list.html`, partial `#rows` (what polls get)."""
    form = TapeListForm(request.GET)
    form.is_valid()  # a parameter that does not validate is ignored
    data = form.cleaned_data
    since, until = form.span(timezone.now())
    filter_error = ""
    try:
        tapes = listing.tapes(
            data.get("q"),
            data.get("source"),
            form.narrowings(),
            kind=data.get("kind"),
            errors=bool(data.get("errors")),
            host=data.get("host"),
            expr=data.get("filter"),
            since=since,
            until=until,
        )
    except expression.FilterError as exc:  # the page says where; it lists nothing it was not asked for
        filter_error = str(exc)
        tapes = Tape.objects.none()
    pages = BoundedPaginator(tapes.order_by(*form.ordering()), LIST_PAGE_SIZE)
    hosts = listing.hosts()
    ctx = {
        "form": form,
        "page": _page(form, pages),
        "sort": form.current_sort(),
        "columns": form.columns(hosts=len(hosts) > 1),
        "hosts": hosts if len(hosts) > 1 else [],  # one host: no host column, no host filter
        "sources": listing.source_labels(),
        "kinds": listing.KINDS,
        "kinds_held": listing.kinds_held(),
        "kind": data.get("kind") or "",
        "has_errors": bool(data.get("errors")),
        "filter_error": filter_error,
        "shown": form.shown(),
        "pickable": [(k, t) for k, t in PICKABLE if k != "host" or len(hosts) > 1],
        "ranges": RANGES,
        "range": data.get("range") or "",
        "custom_since": form.saved_local("since"),
        "custom_until": form.saved_local("until"),
        "fields": expression.FIELDS,
        "total": listing.sessions_total(),
        "saved_query": form.saved_query(),
        "saved_views": SavedView.objects.filter(user=request.user) if request.user.is_authenticated else [],
        "live_seconds": LIVE_SECONDS,
    }
    if not request.htmx:  # the notice is outside #rows: the polls need not count
        ctx["indexing"] = health.indexing()
    template = "tapes/tape_list.html" + ("#rows" if request.htmx else "")
    response = render(request, template, ctx)
    if request.htmx and request.htmx.trigger != "rows":
        # The address bar shows the view as a saved view names it, not every checkbox the form sent.
        response["HX-Push-Url"] = _index(form.saved_query(), data.get("page"), _cursor(data))
    return response


def _page(form: TapeListForm, pages: BoundedPaginator) -> object:
    """The page asked for: by keyset (tapes.seek) unless a page number was asked for or the sort
    ranks by a measure first (tokens), where the bounded Paginator counts its way there."""
    data = form.cleaned_data
    sort = form.current_sort()
    key = sort.lstrip("-")
    if data.get("page") or key == "tokens":
        return pages.get_page(data.get("page"))
    found = pages.object_list
    args = (sort, SORTS[key], key in form.TEXT_COLUMNS, LIST_PAGE_SIZE)
    try:
        page = seek.page(found, *args, after=data.get("after") or None, before=data.get("before") or None)
    except seek.BadCursor:  # a cursor of another sort, or none the index made: the first page
        page = seek.page(found, *args)
    page.paginator = pages  # the bounded count the header and the pager show
    page.number = None if page.has_previous else 1  # only the first page knows where it is
    return page


def _cursor(data: dict) -> str:
    for name in ("after", "before"):
        if data.get(name):
            return f"{name}={data[name]}"
    return ""


@require_POST
def savedview_create(request: HttpRequest) -> HttpResponse:
    """Names the index's filter and sort for the signed-in person; saving a name again replaces it."""
    form = SavedViewForm(request.POST)
    query = known_query(request.POST.get("query", "")[:4000])
    if not form.is_valid():
        messages.error(request, "A saved view needs a name of at most 100 characters.")
        return redirect(_index(query))
    name = form.cleaned_data["name"]
    try:
        with transaction.atomic():
            _, created = SavedView.objects.update_or_create(
                user=request.user, name=name, defaults={"query": query}
            )
    except IntegrityError:  # the same name saved twice at once: the other request's view stands
        created = False
    messages.success(request, f"Saved the view “{name}”." if created else f"Replaced the view “{name}”.")
    return redirect(_index(query))


@require_POST
def savedview_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Forgets one of the signed-in person's saved views (another's is 404); no session is touched."""
    view = get_object_or_404(SavedView, pk=pk, user=request.user)
    view.delete()
    messages.success(request, f"Deleted the saved view “{view.name}”.")
    return redirect("tapes:tape_list")


def _index(query: str, page: int | None = None, cursor: str = "") -> str:
    url = reverse("tapes:tape_list")
    if page and page > 1:
        query = f"{query}&page={page}" if query else f"page={page}"
    elif cursor:
        query = f"{query}&{cursor}" if query else cursor
    return f"{url}?{query}" if query else url


def source_list(request: HttpRequest) -> HttpResponse:
    """Every configured source: its kind (or that it cannot be told), health, how far it is indexed,
    problems, the subfolders it does not read, and where a root given as a link leads (and whether
    it was swapped: `root`, roots.RootLink). Template `tapes/source_list.html`, context
    `sources` (SourceHealth), `rows` (each SourceHealth with its listing.SourceFiles: the sessions
    the index lists, apart from the sidecars and backups listed with them) and `indexing`
    (health.Indexing: the watcher's heartbeat); when the index holds more than one host,
    `this_host` and `elsewhere` (listing.sources_elsewhere)."""
    sources = health.source_health()
    files = listing.files_by_source()
    ctx = {
        "sources": sources,
        "rows": [(s, files.get(s.spec.label, listing.SourceFiles())) for s in sources],
        "indexing": health.indexing(),
    }
    if len(listing.hosts()) > 1:
        ctx.update(this_host=discovery.this_host(), elsewhere=listing.sources_elsewhere())
    return render(request, "tapes/source_list.html", ctx)
