"""Pages of a store's past: who wrote each line (blame), and the store as it was at a point of a tape."""

from __future__ import annotations

from contextlib import suppress

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from . import asof, versions
from .blame import TooLong, blame
from .forms import AsOfForm
from .kinds import kind_of
from .lookup import find_store
from .models import MemoryStore
from .stores.bub_zone import Zone
from .stores.model import StoreError


def store_blame(request: HttpRequest, key: str) -> HttpResponse:
    """Each line of a store's content with the version that introduced it, when, and who wrote it.

    Template `memory_admin/store_blame.html`: `store`, `adapter` (its `blame_note` says what the
    family does not record), `lines` (blame.BlameLine); an unreadable store gets `problem` instead,
    one too long to blame `too_long` (400 both); `urls`, the prefixes its links share.
    """
    store = find_store(key)
    ctx = {"store": store, "adapter": kind_of(store)}
    try:
        lines = blame(store)
    except TooLong as exc:
        return render(request, "memory_admin/store_blame.html", {**ctx, "too_long": str(exc)}, status=400)
    except StoreError as exc:
        return render(request, "memory_admin/store_blame.html", {**ctx, "problem": str(exc)}, status=400)
    # Reversed once, not for each line: a tape's entry pages are under one prefix.
    urls = {
        "diff": reverse("memory_admin:store_diff", args=[key]),
        "store": reverse("memory_admin:store_detail", args=[key]),
    }
    urls["tapes"] = reverse("tapes:tape_detail", args=["-"]).removesuffix("-/")
    return render(request, "memory_admin/store_blame.html", {**ctx, "lines": lines, "urls": urls})


def store_as_of(request: HttpRequest, store: MemoryStore) -> HttpResponse:
    """The store page at a point of the past (`?as_of=`, or `?tape=&anchor=` / `&pos=`): what the agent knew.

    Template `memory_admin/store_asof.html`: `store`, `form`, `point` (asof.Point), `step` (the
    version then: history.Step), `zone` (that version of a Bub zone), `current` (the version now);
    `problem` instead when the point is not one (400) or no version held then (404).
    """
    form = AsOfForm(request.GET)
    ctx: dict = {"store": store, "form": form}
    if not form.is_valid():
        problem = "; ".join(e for errors in form.errors.values() for e in errors)
        return render(request, "memory_admin/store_asof.html", {**ctx, "problem": problem}, status=400)
    data = form.cleaned_data
    with suppress(StoreError):  # the version on disk now joins the history, if the file is readable
        ctx["current"] = versions.snapshot(store).version
    try:
        if data["tape"]:
            point = asof.entry_point(data["tape"], data["anchor"], data["pos"])
        else:
            point = asof.Point.at(data["as_of"])
        step = asof.version_at(store, point)
    except LookupError as exc:  # no such tape, anchor or entry; or no version yet then
        return render(request, "memory_admin/store_asof.html", {**ctx, "problem": str(exc)}, status=404)
    zone = next((z for z in step.items if isinstance(z, Zone)), None)
    ctx.update(point=point, step=step, zone=zone)
    return render(request, "memory_admin/store_asof.html", ctx)
