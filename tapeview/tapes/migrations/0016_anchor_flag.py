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


def flag_anchors(apps, schema_editor):
    Anchor = apps.get_model("tapeview", "Anchor")
    EntryChunk = apps.get_model("tapeview", "EntryChunk")
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
