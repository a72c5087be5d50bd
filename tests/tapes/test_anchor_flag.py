"""Every family's anchors are flagged in the packed index (packing.ANCHOR): the anchors-only timeline
and the activity strip find them in the chunks alone. An index made before the flag existed is
flagged in place by migration 0016, from the Anchor table, without reading the files again."""

from __future__ import annotations

import importlib

import numpy as np
import orjson
import pytest
from django.apps import apps
from django.core.cache import cache

from tapeview.tapes import packing
from tapeview.tapes.models import Anchor, EntryChunk, Tape

from .test_family_anchors import summary_tape
from .test_family_anchors_pages import demo, shown, strip_words  # noqa: F401 (demo: a fixture)

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("tapeview.tapes.migrations.0016_anchor_flag")


def unflag(tape: Tape) -> None:
    """The tape's chunks as an index made before the flag left them."""
    for pk, blob, vocab in EntryChunk.objects.filter(tape=tape).values_list("pk", "columns", "vocab"):
        chunk = packing.decode(bytes(blob), vocab)
        columns = {**chunk.columns, "flags": chunk.columns["flags"] & np.uint8(~packing.ANCHOR & 0xFF)}
        old = packing.Chunk(chunk.kinds, chunk.names, columns)
        EntryChunk.objects.filter(pk=pk).update(columns=old.blob(), tally=orjson.dumps(old.tally()).decode())
    cache.clear()


def anchors_page(client, tape: Tape, **more) -> list[int]:
    return shown(client.get(f"/tapes/{tape.key}/", {"anchors": 1, **more}).content.decode())


def test_a_nanobot_checkpoint_is_found_by_its_flag(viewer_client, demo) -> None:  # noqa: F811
    tape, marker = summary_tape()
    assert anchors_page(viewer_client, tape) == [marker]
    unflag(tape)
    assert anchors_page(viewer_client, tape) == [], "the anchors-only timeline reads the flag alone"
    MIGRATION.flag_anchors(apps, None)
    cache.clear()
    assert anchors_page(viewer_client, tape) == [marker]
    assert anchors_page(viewer_client, tape, end=1) == [marker]
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert ": 1 anchor," in strip_words(page)
    assert "nanobot/summary" in page


def test_an_index_of_bub_tapes_made_before_the_flag_is_flagged_in_place(viewer_client, served) -> None:
    tapes = [t for t in Tape.objects.filter(kind="bub", role="tape") if t.anchors]
    assert len(tapes) > 1
    before = {t.pk: anchors_page(viewer_client, t) for t in tapes}
    marks = {t.pk: strip_words(viewer_client.get(f"/tapes/{t.key}/").content.decode()) for t in tapes}
    for tape in tapes:
        positions = list(Anchor.objects.filter(tape=tape).order_by("pos").values_list("pos", flat=True))
        assert before[tape.pk] == positions[:50]
        unflag(tape)
    chunks = {pk: bytes(blob) for pk, blob in EntryChunk.objects.values_list("pk", "columns")}
    MIGRATION.flag_anchors(apps, None)
    cache.clear()
    for tape in tapes:
        assert anchors_page(viewer_client, tape) == before[tape.pk]
        page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
        assert strip_words(page) == marks[tape.pk]
    # Only the chunks that hold an anchor were written; no entry but the anchors changed.
    for pk, blob, vocab in EntryChunk.objects.values_list("pk", "columns", "vocab"):
        was, now = packing.decode(chunks[pk], vocab), packing.decode(bytes(blob), vocab)
        changed = now.columns["flags"] != was.columns["flags"]
        assert ((now.columns["flags"][changed] & packing.ANCHOR) != 0).all()


def test_a_later_layout_has_the_tapes_with_anchors_read_again(viewer_client, served, monkeypatch) -> None:
    """Run by a version whose chunks are laid out otherwise, the migration does not rewrite blobs it
    cannot read: those tapes are indexed again (and flagged by the indexer)."""
    from tapeview.tapes import index

    tape = max(Tape.objects.filter(kind="bub", role="tape"), key=lambda t: t.anchors)
    positions = list(Anchor.objects.filter(tape=tape).order_by("pos").values_list("pos", flat=True))
    unflag(tape)
    monkeypatch.setattr(packing, "LAYOUT", (*packing.LAYOUT, ("more", np.uint8)))
    MIGRATION.flag_anchors(apps, None)
    monkeypatch.undo()
    flags = [
        packing.decode(bytes(b), v).columns["flags"] for b, v in tape.chunks.values_list("columns", "vocab")
    ]
    assert not any((f & packing.ANCHOR).any() for f in flags), "no blob was rewritten"
    index.refresh(Tape.objects.get(pk=tape.pk))
    cache.clear()
    assert anchors_page(viewer_client, tape) == positions[:50]
    assert Tape.objects.get(pk=tape.pk).anchors == len(positions)
