"""Whole-file JSON documents (yachiyo sessions, araliya's sessions.json and kv.json), read within bounds.

A reader must never crash on what it finds (DESIGN.md, principle 2), so a document is refused,
with a reason the user can read, when it is bigger than MAX_BYTES or nested deeper than a parser
can follow: the same bound Bub lines get, orjson's 1,024 levels (or the standard library's
recursion limit, which is lower, where that parser has to be used).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson

from .raw_bytes import open_bytes

MAX_BYTES = 64 * 1024 * 1024
PREVIEW_BYTES = 600
TOO_DEEP = "JSON nested too deeply to read safely (more levels than a parser follows)"


class DocumentUnreadable(ValueError):
    """A document that cannot be read safely; the message says why, in words for the user."""

    def __init__(self, problem: str, head: bytes = b"", *, torn: bool = False, size: int = -1) -> None:
        super().__init__(problem)
        self.problem = problem
        self.head = head  # the first bytes, for a preview (a too-big file is not read whole)
        self.torn = torn  # it may be a write caught half-way: reading again later may succeed
        self.size = len(head) if size < 0 else size  # bytes of the whole document


def read_bytes(path: Path, limit: int | None = None) -> bytes:
    """The whole file, or DocumentUnreadable when it holds more than `limit` bytes (MAX_BYTES).

    FileNotFoundError and any other OSError pass through: what they mean depends on the reader.
    """
    limit = MAX_BYTES if limit is None else limit
    with open_bytes(path) as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(0)
        data = f.read(limit + 1) if size <= limit else b""
        if size > limit or len(data) > limit:  # the second: it grew while being read
            size = max(size, len(data))
            f.seek(0)
            raise DocumentUnreadable(too_big(size, limit), f.read(PREVIEW_BYTES + 1), size=size)
    return data


def too_big(size: int, limit: int) -> str:
    return f"too big to read: {size:,} bytes (the limit is {limit:,})"


def parse(raw: bytes, *, lone_surrogates: bool = False) -> Any:
    """The JSON value of a whole document, or DocumentUnreadable saying why.

    orjson first: it is fast and refuses nesting deeper than 1,024 levels. The standard library
    parser only explains a failure, or, with `lone_surrogates`, takes the lone surrogate escapes
    ("\\ud83d") that JavaScript writes and orjson (like Rust's serde_json) rejects.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        strict_error = str(exc)
    if not raw.strip():
        raise DocumentUnreadable("empty file", raw, torn=True)
    if b"\x00" in raw:
        # What a file looks like after a crash left its blocks allocated but never written.
        raise DocumentUnreadable("NUL bytes where JSON was expected (zero-filled by a crash?)", raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentUnreadable(f"invalid UTF-8 (at byte {exc.start:,})", raw) from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise DocumentUnreadable(TOO_DEEP, raw) from None
    except json.JSONDecodeError as exc:
        cut = exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip())
        why = "the document ends early" if cut else "invalid JSON"
        raise DocumentUnreadable(f"{why} ({exc})", raw, torn=True) from None
    if not lone_surrogates:
        raise DocumentUnreadable(f"invalid JSON for a strict parser ({strict_error})", raw)
    return value
