"""Where a family that archives old messages (nanobot) cut a session: the first row its archive
pointer leaves unarchived (formats/nanobot.md §2.5), as the timeline and the budget read it. (The
summary it keeps of what came before is its checkpoint's state: the reader gives it, sources.nanobot.)"""

from __future__ import annotations

from pathlib import Path

from tapeview.sources import TapeNotFound, reader

from . import copy_reader
from . import rows as index_rows
from .blocks import Item
from .models import Tape
from .rows import Rows

CONSOLIDATED = "consolidated into memory up to here"


def archive_boundary(tape: Tape, index: Rows | None = None) -> int | None:
    """Where a family that archives old messages (nanobot) draws "consolidated up to here".

    Read through the index: the metadata line's bytes only, and counts of message rows.
    """
    if tape.kind == "bub":  # Bub keeps no archive pointer (sources.bub.pointer): its anchors cut
        return None
    rows = index or index_rows.of(tape)
    metadata = _metadata(tape, rows)
    if metadata is None:
        return None
    messages = rows.where(has_id=True, not_kinds=("metadata",))
    offset = reader(tape.kind).pointer(metadata, messages.count())
    if offset == 0:
        return None
    first = messages.where(min_id=offset).first()
    return first.pos if first else tape.next_pos


def mark(tape: Tape, index: Rows, items: list[Item]) -> int | None:
    """The divider drawn on a timeline page's row the pointer names; the boundary, if there is one."""
    boundary = archive_boundary(tape, index)
    for item in items:
        if item.entry.pos == boundary:
            item.boundary = CONSOLIDATED
    return boundary


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
