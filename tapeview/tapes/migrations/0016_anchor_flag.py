"""An anchor of any family is flagged in the packed index (packing.ANCHOR), so the anchors-only
timeline and the activity strip ask the chunks alone, as they do for errors.

The chunks already indexed are flagged in place from the Anchor table, which holds exactly the
rows the indexer now flags (tapes.index: an anchor line, or a line that is also an anchor): only
the chunks that hold an anchor are written, and no file is read again.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import orjson
from django.db import migrations

from tapeview.tapes import packing

ANCHOR = 16  # packing.ANCHOR
# packing.LAYOUT as this was written: the chunks it flags are of this layout. Run by a later version
# whose packing lays chunks out otherwise, it has the tapes with anchors read again instead.
LAYOUT = (
    ("pos", "int32"),
    ("offset", "int64"),
    ("length", "int64"),
    ("entry_id", "int64"),
    ("date", "int64"),
    ("kind", "uint16"),
    ("name", "uint16"),
    ("flags", "uint8"),
)


def flag_anchors(apps, schema_editor):
    Anchor = apps.get_model("tapeview", "Anchor")
    EntryChunk = apps.get_model("tapeview", "EntryChunk")
    if tuple((name, np.dtype(dtype).name) for name, dtype in packing.LAYOUT) != LAYOUT:
        with_anchors = Anchor.objects.values("tape_id")
        # indexed_at: looked at again; phase_count -1: a Bub tape is reset first (tapes.index._read_appended).
        tapes = apps.get_model("tapeview", "Tape").objects.filter(pk__in=with_anchors)
        tapes.update(indexed_at=None, phase_count=-1)
        return
    held: dict[int, list[int]] = defaultdict(list)
    for tape_id, pos in Anchor.objects.order_by("tape_id", "pos").values_list("tape_id", "pos").iterator():
        held[tape_id].append(pos)
    for tape_id, positions in held.items():
        anchors = np.array(positions, dtype=np.int64)
        chunks = EntryChunk.objects.filter(tape_id=tape_id).values_list("pk", "first_pos", "last_pos")
        for pk, first, last in list(chunks):
            low, high = np.searchsorted(anchors, [first, last + 1])
            if low == high:
                continue
            blob, vocab = EntryChunk.objects.filter(pk=pk).values_list("columns", "vocab").get()
            chunk = packing.decode(bytes(blob), vocab)
            columns = dict(chunk.columns)
            flags = columns["flags"].copy()
            flags[np.isin(columns["pos"], anchors[low:high])] |= ANCHOR
            columns["flags"] = flags
            flagged = packing.Chunk(chunk.kinds, chunk.names, columns)
            tally = orjson.dumps(flagged.tally()).decode()
            EntryChunk.objects.filter(pk=pk).update(columns=flagged.blob(), tally=tally)


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0015_nanobot_anchors"),
    ]

    # Backwards: the bit is one no earlier version reads (it asks each flag by its own bit).
    operations = [
        migrations.RunPython(flag_anchors, migrations.RunPython.noop),
    ]
