"""The prices page: the table costs are priced with, where it comes from, and the models the index
holds that it does not price."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .. import costs, prices
from ..models import Tape


def price_list(request: HttpRequest) -> HttpResponse:
    """Template `tapes/price_list.html`: `table` (prices.Table), `problem` (what is wrong with the
    TAPEVIEW_PRICES file: the last good table stands meanwhile), `unpriced` (models the sessions
    used that the table does not know) and `repriced` (the stored costs that the table changed)."""
    problem = ""
    try:
        prices.table()
    except prices.PricesInvalid as exc:
        problem = str(exc)
    table = prices.current()
    # The table changed since the stored costs were priced (its file edited): price them again now.
    stale = Tape.objects.exclude(priced_with=table.digest).exclude(priced_with="").exists()
    repriced = costs.reprice() if stale else 0
    used: set[str] = set()
    unknown = Tape.objects.filter(cost__isnull=True).exclude(model_usage={})
    for usage in unknown.values_list("model_usage", flat=True):
        used.update(usage or {})
    unpriced = sorted(m or "(model not named)" for m in used if not m or table.find(m) is None)
    ctx = {"table": table, "problem": problem, "unpriced": unpriced, "repriced": repriced}
    return render(request, "tapes/price_list.html", ctx)
