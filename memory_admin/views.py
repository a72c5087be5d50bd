"""Memory pages: the Bub memory zone of a tape (read only for now)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from tapeview import index
from tapeview.models import Tape

from . import zones


def zone_detail(request: HttpRequest, key: str) -> HttpResponse:
    """A tape's memory zone: versions, what changed, the current text and daily notes.

    Template `memory_admin/zone_detail.html`.
    """
    tape = get_object_or_404(Tape, key=key)
    index.refresh(tape)
    found = zones.zones_of(tape)
    return render(request, "memory_admin/zone_detail.html", {"tape": tape, **found})
