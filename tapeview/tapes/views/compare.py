"""The compare page: two sessions, or a phase of each, side by side, and their steps aligned."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from .. import alignment, comparison, listing, lookup, phases
from ..forms import CompareForm
from ..models import Tape

PICKED = 200  # the most recent sessions the pickers offer
PHASES_OFFERED = 200


def tape_compare(request: HttpRequest) -> HttpResponse:
    """Template `tapes/tape_compare.html`. With both tapes: `comparison` (comparison.Comparison)
    and `alignment` (alignment.Alignment); always `form`, the pickers' `choices` and each side's
    `phases_a` / `phases_b`. An unknown tape or phase is 404; a query that does not validate, 400."""
    form = CompareForm(request.GET)
    ctx: dict = {"form": form, "choices": _choices()}
    if not form.is_valid():
        ctx["problem"] = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        return render(request, "tapes/tape_compare.html", ctx, status=400)
    data = form.cleaned_data
    a = lookup.find_tape(data["a"]) if data["a"] else None
    b = lookup.find_tape(data["b"]) if data["b"] else None
    ctx.update(a=a, b=b, phases_a=_phases(a), phases_b=_phases(b))
    if a is None or b is None:
        return render(request, "tapes/tape_compare.html", ctx)
    try:
        found = comparison.compare(a, b, data["pa"], data["pb"])
    except comparison.NoSuchPhase as exc:
        raise Http404(str(exc)) from None
    ctx["comparison"] = found
    ctx["alignment"] = alignment.align(found.a, found.b, data["after_a"], data["after_b"])
    ctx["paged"] = data["after_a"] is not None or data["after_b"] is not None
    return render(request, "tapes/tape_compare.html", ctx)


def _choices() -> list[Tape]:
    return list(listing.tapes().order_by("-last_at", "label")[:PICKED])


def _phases(tape: Tape | None) -> list[phases.Phase]:
    return phases.in_order(tape, limit=PHASES_OFFERED)[0] if tape is not None else []
