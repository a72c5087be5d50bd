"""A tape, or the segment between two of its anchors, exported: as JSONL or a Markdown transcript.

Streamed, never loaded whole: the JSONL of a tape whose entries are lines (Bub's, nanobot's) is its
bytes between two index offsets, read in blocks; everything else is read through the index a batch
of entries at a time.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.utils.text import slugify

from tapeview.sources import TapeNotFound, python_json, reader
from tapeview.sources.raw_bytes import open_file, require, stat_of

from . import copy_reader, index, timeline
from .context import AnchorNotFound
from .lookup import MAX_POS, find_row
from .models import Anchor, Tape
from .transcript import entry_markdown

FORMATS = {
    # JSONL: one JSON value a line; not a type a browser renders (and always an attachment).
    "jsonl": "application/x-ndjson; charset=utf-8",
    "md": "text/markdown; charset=utf-8",
}
BATCH = 500
# Kinds whose files the agent rewrites wholesale but whose entries are lines of their own, the JSONL
# the agent wrote: exported byte for byte as well. (yachiyo and araliya keep documents: one JSON line
# per entry is written for them.)
LINE_FILES = {"nanobot"}
REREAD_TRIES = 3
NAME_LENGTH = 300  # Anchor.name's max_length
CHUNK = 1 << 20


class BadSegment(ValueError):
    """`to` is not an anchor after `from`, or `from` or `to` cannot name an anchor."""


class Rewritten(TapeNotFound):
    """The agent rewrote the file since it was indexed, and the index cannot read the new version (it
    reads as damaged, as when caught mid-write): a segment's place in it is unknown, and nothing is
    sent. A 503 with Retry-After on pages and in the API (tapeview.errors), as for bytes on their way."""

    retry_after = 2
    detail = (
        "the agent is rewriting this session's file (it reads as damaged now): export the segment again "
        "in a moment; the whole file can be exported as it is"
    )


@dataclass(frozen=True)
class Segment:
    """The entries from the anchor at `start` (None: the tape's first line) up to the one before
    the anchor at `stop` (None: the last line indexed)."""

    start: int | None = None
    stop: int | None = None

    @property
    def whole(self) -> bool:
        return self.start is None and self.stop is None


@dataclass(frozen=True)
class Export:
    chunks: Iterator[bytes]
    filename: str
    content_type: str


def segment(tape: Tape, start: int | str | None = None, stop: int | str | None = None) -> Segment:
    """The segment between two anchors of the tape, each named as the context page's `?anchor=`
    names one: by position, or by name (its last occurrence). Raises AnchorNotFound when a
    tape has no such anchor, BadSegment when `to` is not after `from` or cannot name an anchor."""
    first, last = _anchor_pos(tape, start, "from"), _anchor_pos(tape, stop, "to")
    if first is not None and last is not None and last <= first:
        raise BadSegment("`to` must be an anchor after `from`")
    return Segment(first, last)


def _anchor_pos(tape: Tape, ref: int | str | None, param: str) -> int | None:
    if ref is None or ref == "":
        return None
    name = str(ref)
    if len(name) > NAME_LENGTH or "\x00" in name:  # no anchor is named so; NUL never reaches the database
        raise BadSegment(f"`{param}` is an anchor's position or name (at most {NAME_LENGTH} characters)")
    anchors = Anchor.objects.filter(tape=tape)
    # A position first, as the timeline's links give it; else a name, as the timeline shows it.
    pos = int(name) if name.isascii() and name.isdigit() and len(name) <= len(str(MAX_POS)) else None
    found = anchors.filter(pos=pos).first() if pos is not None and 1 <= pos <= MAX_POS else None
    found = found or anchors.filter(name=name).order_by("-pos").first()
    if found is None:
        where = f"at entry {pos} of" if pos else f"{name!r} on"
        raise AnchorNotFound(f"no anchor {where} this tape")
    return found.pos


def export(tape: Tape, fmt: str, start: int | str | None = None, stop: int | str | None = None) -> Export:
    """The tape (or a segment, see `segment`) as `fmt` ("jsonl" or "md"), streamed.

    Raises AnchorNotFound, BadSegment, and TapeNotFound when the file is gone.
    """
    part = segment(tape, start, stop)
    if fmt == "md":
        chunks = _markdown(tape, part)
    elif tape.append_only:
        chunks = _lines(tape, part)
    elif tape.kind in LINE_FILES:
        chunks = _rewritten_lines(tape, part)
    else:
        chunks = _records(tape, part)
    # The file opens at the first chunk: take it now, so that a file gone since the lookup is a
    # 404 rather than a download broken off once it has started (another host's file: its copy,
    # which must hold the whole segment, else NotCopiedYet now).
    with copy_reader.reading(tape.host):
        if copy_reader.copied(tape.host):
            with open_file(Path(tape.path)) as f:
                require(f, _offset(tape, part.stop) if part.stop is not None else tape.indexed_offset)
        first = next(chunks, b"")
    return Export(itertools.chain([first], chunks), filename(tape, part, fmt), FORMATS[fmt])


def filename(tape: Tape, part: Segment, fmt: str) -> str:
    """A name safe on every system: the label's letters and digits, then the tape's key."""
    # Each run of other characters a hyphen ("cli:local" reads cli-local, not clilocal); the key
    # tells apart the tapes of one label (Bub names every CLI session "cli:local").
    words = re.sub(r"\W+", "-", unicodedata.normalize("NFKC", tape.label))
    label = slugify(words, allow_unicode=True)[:80].strip("-_")
    base = f"{label}-{tape.key}" if label else tape.key
    if part.start is not None:
        base += f"-from-{part.start}"
    if part.stop is not None:
        base += f"-to-{part.stop}"
    return f"{base}.{fmt}"


def _lines(tape: Tape, part: Segment) -> Iterator[bytes]:
    """The lines of an append-only tape, byte for byte, as far as they are indexed (whole lines)."""
    begin = _offset(tape, part.start) if part.start is not None else 0
    end = _offset(tape, part.stop) if part.stop is not None else tape.indexed_offset
    yield from reader(tape.kind).read_raw(Path(tape.path), begin, max(0, end - begin), CHUNK)


def _rewritten_lines(tape: Tape, part: Segment) -> Iterator[bytes]:
    """The lines of a file the agent rewrites wholesale, byte for byte: the whole file as it is when
    opened, or a segment of the version the index read (whose offsets they are). Rewritten since
    (an atomic rename: the open file stays whole), the index catches up and the offsets are read
    again."""
    for attempt in range(REREAD_TRIES):
        f = open_file(Path(tape.path))
        st = stat_of(f)
        same = (st.ino, st.size) == (tape.inode, tape.size)
        if part.whole or same and not tape.problem.startswith(index.DAMAGED):
            break
        f.close()
        if same or attempt == REREAD_TRIES - 1:
            raise Rewritten(tape.path)
        index.refresh(tape, wait=1.0)
    with f:
        begin = _offset(tape, part.start) if part.start is not None else 0
        end = _offset(tape, part.stop) if part.stop is not None else st.size
        require(f, end)
        f.seek(begin)
        left = max(0, end - begin)
        while left > 0 and (block := f.read(min(CHUNK, left))):
            left -= len(block)
            yield block


def _offset(tape: Tape, pos: int) -> int:
    return find_row(tape, pos).offset


def _entries(tape: Tape, part: Segment):
    """The segment's entries in file order, read a batch at a time."""
    after = part.start - 1 if part.start is not None else None
    while True:
        rows = timeline.find_rows(tape, after=after, before=part.stop, limit=BATCH)
        if not rows:
            return
        yield from sorted(timeline.read_rows(tape, rows), key=lambda e: e.pos)
        after = rows[-1].pos


def _records(tape: Tape, part: Segment) -> Iterator[bytes]:
    """A JSON document's entries (no lines of their own), one JSON line per entry's payload."""
    for e in _entries(tape, part):
        if e.readable:
            yield python_json.dumps(e.payload) + b"\n"


def _markdown(tape: Tape, part: Segment) -> Iterator[bytes]:
    source = reader(tape.kind)
    entries = _entries(tape, part)
    ahead = next(entries, None)  # the first batch is read (and the file opened) before any byte goes out
    end = f"#{part.stop - 1}" if part.stop else "the end"
    span = "" if part.whole else f", entries #{part.start or 1} to {end}"
    title = " ".join(tape.label.split())
    yield f"# {title}\n\n{tape.kind} · {tape.source} · {tape.name}{span}\n\n".encode(errors="replace")
    for e in itertools.chain([ahead] if ahead else [], entries):
        text = entry_markdown(source, e)
        if text:
            yield text.encode(errors="replace")
