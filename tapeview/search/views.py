"""The search page: tape entries or memory items matching a query, with highlighted snippets."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import F
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from memory_admin.models import MemoryStore
from tapeview.tapes import discovery
from tapeview.tapes.models import Anchor, Tape

from . import backends, catchup, engine
from .entries import SEARCHABLE
from .forms import KINDS, ROLES, SearchForm

PAGE_SIZE = 50
TAPE_CHOICES = 300  # the most recently active tapes offered in the tape filter


# htmx gets a partial at the same URL, and which one depends on its target: caches must keep each.
@vary_on_headers("HX-Request", "HX-Target")
def search(request: HttpRequest) -> HttpResponse:
    """Search every entry of every tape (or every memory store on the memory tab).

    Template `search/search.html`, context: `hits` (a page of them, each with the entries that
    repeat it in `copies`), `sessions` (the same hits by tape, with each tape's `count` of matching
    entries), `count` (of every matching entry: capped, or all of them with `?count=exact`, for at
    most `count_seconds`), `count_note` (what it counts), `behind` (entries indexed but not yet searchable),
    `waiting` (entries searchable, not yet in PostgreSQL's GIN index: see search.fresh) and
    `searchable` (what part of a long entry is searched, in plain words).
    htmx gets its partial `#results`, or `#search` (the filters with the results) when a change of
    tab or tape changes the filters themselves.
    """
    form = SearchForm(request.GET)
    hits: list = []
    count = None
    if form.is_valid() and form.cleaned_data["q"].strip():
        q, order = form.cleaned_data["q"], form.current_order()
        window = {"order": order, "limit": PAGE_SIZE + 1, "offset": form.offset(PAGE_SIZE)}
        discovery.sync_if_stale()  # Bub memory zones are found through the tape index too
        catchup.catch_up_unwatched()
        if form.current_tab() == "memory":
            hits = engine.search_memory(q, **form.memory_filters(), **window)
        else:
            hits = engine.search(q, **form.tape_filters(), **window)
            shown = {h.tape_key for h in hits[:PAGE_SIZE]}
            exact = form.exact_count()
            found = engine.count(q, tapes=shown, exact=exact, **form.tape_filters()) if hits else None
            count = found or engine.Count(0, exact=exact)
    page = (form.cleaned_data.get("page") or 1) if form.is_valid() else 1
    ctx = {
        "form": form,
        "tab": form.current_tab(),
        "hits": hits[:PAGE_SIZE],
        "sessions": _by_session(hits[:PAGE_SIZE], count) if count is not None else [],
        "count": count,
        "candidates": backends.CANDIDATES,
        "count_note": engine.COUNT_NOTE,
        "count_seconds": settings.TAPEVIEW_SEARCH_COUNT_SECONDS,
        "searchable": SEARCHABLE,
        "behind": catchup.lag(),
        "waiting": backend.waiting() if (backend := backends.current()) else 0,
        "page": page,
        "has_next": len(hits) > PAGE_SIZE,
        "kinds": KINDS,
        "roles": ROLES,
        "tabs": [("tapes", "Tapes"), ("memory", "Memory")],
        **(_memory_choices() if form.current_tab() == "memory" else _tape_choices(form)),
    }
    template = "search/search.html"
    if request.htmx:
        template += "#search" if request.htmx.target == "search" else "#results"
    return render(request, template, ctx)


@dataclass
class Session:
    """The hits of one tape on a page, and how many entries of it match in all."""

    tape_key: str
    tape_label: str
    source: str
    count: engine.Count | None
    tape_name: str = ""  # tells apart tapes of one label (a Bub workspace's many `cli:local`)
    hits: list[engine.Hit] = field(default_factory=list)


def _by_session(hits: list[engine.Hit], count: engine.Count) -> list[Session]:
    """The page's hits by tape, the tapes in the order of their best hit."""
    sessions: dict[str, Session] = {}
    names = dict(Tape.objects.filter(key__in={hit.tape_key for hit in hits}).values_list("key", "name"))
    for hit in hits:
        key = hit.tape_key
        found = Session(key, hit.tape_label, hit.source, count.by_tape.get(key), names.get(key, ""))
        session = sessions.setdefault(key, found)
        session.hits.append(hit)
    return list(sessions.values())


def _tape_choices(form: SearchForm) -> dict:
    chosen = Tape.objects.filter(key=form.data.get("tape") or "").first()
    recent = Tape.objects.filter(role="tape").order_by(F("last_at").desc(nulls_last=True), "label")
    tapes = list(recent[:TAPE_CHOICES])
    if chosen is not None and chosen not in tapes:
        tapes.insert(0, chosen)
    return {
        "sources": Tape.objects.values_list("source", flat=True).distinct().order_by("source"),
        "tapes": tapes,
        "anchors": Anchor.objects.filter(tape=chosen).order_by("pos") if chosen else [],
    }


def _memory_choices() -> dict:
    return {
        "stores": MemoryStore.objects.order_by("source", "kind", "owner", "title"),
        "store_kinds": MemoryStore.objects.values_list("kind", flat=True).distinct().order_by("kind"),
    }
