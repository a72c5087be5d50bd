"""One entry as the agent wrote it, for the raw link of the entry page and the API's .../raw."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from tapeview.sources import reader

from . import copy_reader
from .models import Tape
from .rows import Row
from .timeline import read_rows

# Text, never a type a browser renders or runs: the bytes are the agent's, not ours
# (SecurityMiddleware adds X-Content-Type-Options: nosniff to every response).
CONTENT_TYPE = "text/plain; charset=utf-8"


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
    text = json_bytes(read_rows(tape, [row])[0].payload)
    return RawEntry(iter([text]), len(text))


def json_bytes(payload: object) -> bytes:
    """Compact UTF-8 JSON of a payload the agent wrote, whatever its integers."""
    try:
        return orjson.dumps(payload)
    except TypeError:  # an integer past 64 bits: the standard library writes any
        return json.dumps(payload, ensure_ascii=False).encode()
