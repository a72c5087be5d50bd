"""A tape's memory zones through the index: find them, read only their entries, index what a write added."""

from __future__ import annotations

from django.db.models import Q

from tapeview.tapes import index
from tapeview.tapes.models import EntryRow, Tape
from tapeview.tapes.timeline import read_rows

from .stores import bub_zone
from .stores.model import Snapshot

ZONE_ROWS = Q(kind="anchor", name__startswith="memory/") | Q(kind="event", name__startswith="memory.")


def zones_of(tape: Tape) -> dict:
    """The zone versions of a tape, or of its memory sidecar when the zone is kept there."""
    # The sidecar wins once it holds a zone: a zone is only ever moved there, never back.
    holders = [*tape.attachments.filter(role="sidecar", name__endswith="__sidecar__memory"), tape]
    for holder in holders:
        rows = list(EntryRow.objects.filter(ZONE_ROWS, tape=holder).order_by("pos"))
        if rows:
            zones = bub_zone.read_zones(read_rows(holder, rows))
            return {
                "holder": holder,
                "zones": zones,
                "current": bub_zone.current(zones),
                "changes": list(reversed(bub_zone.changes(zones))),
            }
    return {"holder": None, "zones": [], "current": None, "changes": []}


def snapshot(found: dict) -> Snapshot:
    """The zone the agent reads, as a store snapshot: its version number and canonical text."""
    zone = found["current"]
    version = str(zone.version) if zone else "missing"
    return Snapshot(version, bub_zone.zone_text(zone), found["zones"])


def refresh(tape: Tape) -> None:
    """Index what a zone write appended, to the tape or to its memory sidecar."""
    index.refresh(tape)
    for attachment in tape.attachments.all():
        index.refresh(attachment)
