"""One entry as the agent wrote it, for the raw link of the entry page and the API's .../raw."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from tapeview.sources import python_json, reader

from . import copy_reader
from .models import Tape
from .rows import Row
from .timeline import read_rows

# Text, never a type a browser renders or runs: the bytes are the agent's, not ours
# (SecurityMiddleware adds X-Content-Type-Options: nosniff to every response).
CONTENT_TYPE = "text/plain; charset=utf-8"
DEPTH = 200  # levels of nesting an answer of ours holds (orjson writes 254, json.dumps recurses)


@dataclass(frozen=True)
class RawEntry:
    chunks: Iterator[bytes]
    length: int  # bytes in all the chunks: the Content-Length
    content_type: str = CONTENT_TYPE


def read(tape: Tape, row: Row) -> RawEntry:
    """The line's bytes, streamed, from an append-only tape; of a JSON document, the entry as JSON.

    Raises TapeNotFound when the file is gone.
    """
    if tape.append_only:
        chunks = reader(tape.kind).read_raw(Path(tape.path), row.offset, row.length)
        # The file opens at the first chunk: take it now, so that a file deleted since the lookup
        # is TapeNotFound here (a 404) rather than a response broken off once it has started (and
        # another host's file is its copy: the copy, once open, streams the rest).
        with copy_reader.reading(tape.host):
            first = next(chunks, b"")
        return RawEntry(itertools.chain([first], chunks), row.length)
    # A record inside a document the agent rewrites wholesale is no line of its own: its payload is.
    text = python_json.dumps(read_rows(tape, [row])[0].payload)
    return RawEntry(iter([text]), len(text))


def json_answer(value: object) -> tuple[bytes, bool]:
    """python_json.dumps of `value`, and whether an answer of ours can hold it as it is: what orjson writes,
    or what it refuses for an integer past 64 bits only (nested DEPTH levels at most)."""
    try:
        return orjson.dumps(value), True
    except TypeError:
        return python_json.dumps(value), not nested_past(value, DEPTH)


def nested_past(value: object, levels: int) -> bool:
    """Whether `value` nests lists and objects more than `levels` deep (`[[]]` is two)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > levels:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False
