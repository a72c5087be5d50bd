"""What the index says of a folder of tapes, to compare two ways of indexing the same files."""

from __future__ import annotations

import shutil
from pathlib import Path

from tapeview.sources import parse_sources
from tapeview.tapes import discovery, rows
from tapeview.tapes.models import Anchor, Tape

# Fields that differ between two indexes of copies of the same file by design: ids, names, times,
# owners, the copy itself.
SKIPPED = (
    "id",
    "key",
    "source",
    "indexed_at",
    "indexer",
    "indexing_until",
    "path",
    "owner_id",
    "device",
    "inode",
)


def indexed(label: str, root: Path, *, afresh: bool = True) -> dict[str, tuple]:
    """Everything the index says of each tape of a folder: its statistics, anchors and rows.

    Afresh, each label indexes a copy of the folder of its own: one folder is one source whatever its
    label, so a second label over the same folder would only relabel the first index."""
    if afresh:
        root = shutil.copytree(root, root.with_name(f"{root.name}.{label}"), dirs_exist_ok=True)
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
