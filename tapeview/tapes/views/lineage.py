"""A tape's lineage page: the chain of its session's handoffs."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from .. import lineage, lookup
from ..api.cursor import BadCursor, decode, encode
from ..forms import LineageForm

LINEAGE_PAGE_SIZE = 100


def tape_lineage(request: HttpRequest, key: str) -> HttpResponse:
    """The chain of a session's handoffs, archives first, each state diffed with the one before.

    Template `tapes/tape_lineage.html`.
    """
    tape = lookup.find_tape(key)
    form = LineageForm(request.GET)
    cursor = form.cleaned_data.get("cursor") if form.is_valid() else None
    try:
        after = decode(cursor, {"t": int, "pos": int}) if cursor else None
        found, more = lineage.links(tape, (after["t"], after["pos"]) if after else None, LINEAGE_PAGE_SIZE)
    except BadCursor:
        raise Http404("no such page of this lineage") from None
    last = found[-1] if found else None
    ctx = {
        "tape": tape,
        "links": found,
        "next_cursor": encode({"t": last.place, "pos": last.anchor.pos}) if more and last else None,
    }
    return render(request, "tapes/tape_lineage.html", ctx)
