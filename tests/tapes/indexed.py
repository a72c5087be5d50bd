"""What the index says of a folder of tapes, to compare two ways of indexing the same files."""

from __future__ import annotations

from pathlib import Path

from tapeview.sources import parse_sources
from tapeview.tapes import discovery, rows
from tapeview.tapes.models import Anchor, Tape

# Fields that differ between two indexes of the same file by design: ids, names, times, owners.
SKIPPED = ("id", "key", "source", "indexed_at", "indexer", "indexing_until", "path", "owner_id")


def indexed(label: str, root: Path) -> dict[str, tuple]:
    """Everything the index says of each tape of a folder: its statistics, anchors and rows."""
    discovery.sync(parse_sources([f"{label}=bub:{root}"]))
    found = {}
    for t in Tape.objects.filter(source=label).order_by("rel"):
        stats = {f.attname: getattr(t, f.attname) for f in Tape._meta.fields if f.attname not in SKIPPED}
        anchors = [
            {k: v for k, v in a.items() if k not in ("id", "tape_id")}
            for a in Anchor.objects.filter(tape=t).order_by("pos").values()
        ]
        found[t.rel] = (stats, anchors, rows.of(t).all())
    return found
