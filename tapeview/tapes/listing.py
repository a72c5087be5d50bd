"""The list of sessions, as the session index page and the API's tape list both filter it."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from . import discovery
from .models import Tape


def tapes(q: str | None = None, source: str | None = None) -> QuerySet[Tape]:
    """The sessions (attachments are listed with their tape) as the sources hold them now.

    `q` is looked for in the label, the file name and the last anchor; `source` is a label.
    """
    discovery.sync_if_stale()
    found = Tape.objects.filter(owner__isnull=True)
    if q:
        found = found.filter(Q(label__icontains=q) | Q(name__icontains=q) | Q(last_anchor__icontains=q))
    if source:
        found = found.filter(source=source)
    return found


def source_labels() -> QuerySet:
    """The label of every source that has tapes, in order."""
    return Tape.objects.values_list("source", flat=True).distinct().order_by("source")
