"""The search pass's reading: each line of a tape as the doc it makes, most Bub lines without an Entry.

A Bub line that is a JSON object with an integer id, a kind the agent writes, an object payload and
a date string is read here, in one loop over local names, straight from its parsed JSON: its text,
kind, name and date text exactly as `entries.entry_text` and `docs.date_text` make them of the Entry
that sources.bub_lines would read. Every other line (not JSON, an id past 64 bits, an odd kind, a
timestamp instead of a date, a line too long to parse) goes, with its parsed JSON, to that reader,
as does every line of the other agents' tapes. The same idea as the indexer's bulk path
(tapes.fastlane). Most plain lines are read in C (search/_text.c `plain_doc`), where it is sure to make
the same doc as the code here; the rest, and every line where it is not built, by the code here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson

from tapeview.sources import Entry, bub_next, reader
from tapeview.sources.bub import lines as bub_lines
from tapeview.sources.bub_lines import FIRST_ID, LAST_ID, parse_line, parsed_line

from .docs import date_text
from .entries import entry_text
from .text import native, payload_text

# A doc as the pass makes it: the entry's pos, offset and length (its line's), kind, name, searchable
# text and date as text ("" for an unknown time).
Doc = tuple[int, int, int, str, str, str, str]

PLAIN_KINDS = frozenset({"message", "tool_call", "tool_result", "event", "system", "anchor", "error"})
_UTC_MICROS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}\+00:00")


def tape_docs(kind: str, path: Path, start: int = 0, first_pos: int = 1) -> Iterator[Doc]:
    """The docs of a tape's complete lines from byte `start` (line `first_pos`) on."""
    if kind == "bub" and bub_next.file_format(path) != bub_next.FORMAT:
        return bub_docs(bub_lines(path, start, first_pos))
    # Bub's next format, and the other agents: each line read the full way (sources.bub.scan)
    return map(entry_doc, reader(kind).scan(path, start, first_pos))


def entry_doc(entry: Entry) -> Doc:
    """The doc of an entry read the full way."""
    return (
        entry.pos,
        entry.offset,
        entry.length,
        entry.kind,
        entry.name,
        entry_text(entry),
        date_text(entry.date),
    )


def bub_docs(lines: Iterable[tuple[int, int, bytes | Entry]]) -> Iterator[Doc]:
    """The docs of (pos, offset, line) as sources.bub.lines gives them."""
    loads, decode_error, fromiso, utc, text_of = (
        orjson.loads,
        orjson.JSONDecodeError,
        datetime.fromisoformat,
        UTC,
        payload_text,
    )
    canonical = _UTC_MICROS.fullmatch
    plain_doc = _compiled()
    for pos, offset, raw in lines:
        if type(raw) is not bytes:  # the Entry of a line too long to parse
            yield entry_doc(raw)
            continue
        try:
            obj = loads(raw)
        except decode_error:
            # What Bub's json.loads reads besides (NaN, a lone surrogate...), or an unreadable line.
            yield entry_doc(parse_line(raw + b"\n", pos, offset))
            continue
        # Most lines: the same doc as below, made in C (search/_text.c) where it is sure of it.
        doc = plain_doc(obj, pos, offset, len(raw) + 1)
        if doc is not None:
            yield doc
            continue
        if type(obj) is dict:
            eid, kind, payload, date = obj.get("id"), obj.get("kind"), obj.get("payload"), obj.get("date")
            plain = (
                type(eid) is int
                and FIRST_ID <= eid <= LAST_ID
                and type(kind) is str
                and kind in PLAIN_KINDS
                and type(payload) is dict
                and type(date) is str
            )
        else:
            plain = False
        if not plain:
            yield entry_doc(parsed_line(obj, raw + b"\n", pos, offset))
            continue
        if kind == "message":
            name = payload.get("role")
        elif kind == "event" or kind == "anchor":
            name = payload.get("name")
        else:
            name = ""
        if type(name) is not str:
            name = ""
        try:
            when = fromiso(date)
        except ValueError:  # an unreadable date: the entry's time is unknown
            day = ""
        else:
            # As Bub writes a date (UTC, microseconds), it is its own date text less the offset.
            day = (
                date[:26]
                if canonical(date) and date[20:26] != "000000"
                else date_text(when if when.tzinfo is not None else when.replace(tzinfo=utc))
            )
        head = f"{kind} {name}".strip() if name else kind
        yield pos, offset, len(raw) + 1, kind, name, text_of(head, payload), day


def _compiled():
    """search/_text.c's plain_doc, where it is built and takes the kinds this module takes (a kind
    added or removed on one side only leaves every line to the code here); else _none."""
    if native is None or frozenset(native.PLAIN_KINDS) != PLAIN_KINDS:
        return _none
    return native.plain_doc


def _none(*args: object) -> None:
    """plain_doc where search/_text.c is not built: every line is read by bub_docs' own code."""
    return None
