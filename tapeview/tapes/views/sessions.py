"""The session index and the sources page."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from .. import health, listing
from ..forms import TapeListForm
from ..models import Tape

LIST_PAGE_SIZE = 50


# The same URL answers htmx with a partial and a browser with the page: caches must keep both.
@vary_on_headers("HX-Request")
def tape_list(request: HttpRequest) -> HttpResponse:
    """Every session of every source. Template `tapeview/tape_list.html`, partial `#rows`."""
    form = TapeListForm(request.GET)
    form.is_valid()
    tapes = listing.tapes(form.cleaned_data.get("q"), form.cleaned_data.get("source"), form.narrowings())
    pages = Paginator(tapes.order_by(*form.ordering()), LIST_PAGE_SIZE)
    ctx = {
        "form": form,
        "page": pages.get_page(form.cleaned_data.get("page")),
        "sort": form.current_sort(),
        "columns": form.columns(),
        "sources": listing.source_labels(),
        "total": Tape.objects.count(),
    }
    template = "tapes/tape_list.html" + ("#rows" if request.htmx else "")
    return render(request, template, ctx)


def source_list(request: HttpRequest) -> HttpResponse:
    """Every configured source, its detected kind and health. Template `tapeview/source_list.html`."""
    return render(request, "tapes/source_list.html", {"sources": health.source_health()})
