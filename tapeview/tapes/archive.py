"""Where a family that archives old messages (nanobot) cut a session: the first row its archive
pointer leaves unarchived, and the summary it keeps of what came before (formats/nanobot.md §2.4,
§2.5), as the timeline draws them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tapeview.sources import TapeNotFound, reader
from tapeview.sources.nanobot import SUMMARY_ANCHOR, last_summary

from . import copy_reader
from . import rows as index_rows
from .blocks import Item
from .models import Tape
from .rows import Rows

CONSOLIDATED = "consolidated into memory up to here"


@dataclass(frozen=True)
class Cut:
    boundary: int | None  # the pos of the first row not archived; None when nothing is
    summary: str  # `_last_summary.text`: of the checkpoint at the boundary, "" when none is kept


def archive_boundary(tape: Tape, index: Rows | None = None) -> int | None:
    """Where a family that archives old messages (nanobot) draws "consolidated up to here".

    Read through the index: the metadata line's bytes only, and counts of message rows.
    """
    return cut(tape, index).boundary


def cut(tape: Tape, index: Rows | None = None) -> Cut:
    if tape.kind == "bub":  # Bub keeps no archive pointer (sources.bub.pointer): its anchors cut
        return Cut(None, "")
    rows = index or index_rows.of(tape)
    metadata = _metadata(tape, rows)
    if metadata is None:
        return Cut(None, "")
    messages = rows.where(has_id=True, not_kinds=("metadata",))
    offset = reader(tape.kind).pointer(metadata, messages.count())
    if offset == 0:
        return Cut(None, "")
    first = messages.where(min_id=offset).first()
    return Cut(first.pos if first else tape.next_pos, last_summary(metadata))


def mark(tape: Tape, index: Rows, items: list[Item], only: str) -> int | None:
    """The cut drawn on a timeline page's items: the divider on the row the pointer names (not on a
    narrowed timeline), the summary on the checkpoint there. The boundary, when it is drawn."""
    if only and not any(i.entry.anchor == SUMMARY_ANCHOR for i in items):
        return None  # nothing to draw: the metadata line is not read
    found = cut(tape, index)
    for item in items:
        if item.entry.pos != found.boundary:
            continue
        if not only:
            item.boundary = CONSOLIDATED
        if item.entry.anchor == SUMMARY_ANCHOR:
            # Compaction moves the pointer onto the checkpoint it inserts: its summary is this one.
            item.summary = found.summary
    return None if only else found.boundary


def _metadata(tape: Tape, rows: Rows) -> dict | None:
    """The last metadata record (only a family that keeps an archive pointer writes one)."""
    meta = rows.where(kinds=("metadata",), readable=True).last()
    if meta is None:
        return None
    try:
        with copy_reader.reading(tape.host):  # another host's file: its copy in the database
            found = reader(tape.kind).read_entries(Path(tape.path), [(meta.pos, meta.offset, meta.length)])
    except TapeNotFound:
        return None
    payload = found[0].payload if found else None
    return payload if isinstance(payload, dict) else None
