"""The searchable text of a tape entry, as the search pass makes its doc.

Plain Python (no Django). A readable entry's text is its payload's (text.payload_text: whole up to
text.LIMIT characters, else its first text.HEAD and last text.TAIL); a line too long to parse
(over sources.model.SCAN_PARSE_LIMIT) is read only by its head, and the strings in that head are
its text; an unreadable line's text is its problem and preview.
"""

from __future__ import annotations

from typing import Any

from tapeview.sources import json_head
from tapeview.sources.model import DISPLAY_PREVIEW_BYTES, SCAN_PARSE_LIMIT

from .text import HEAD, LIMIT, SKIP_KEYS, TAIL, is_blob, payload_text

LONG_LINE_LIMIT = DISPLAY_PREVIEW_BYTES  # characters of a long line's head text: all the reader keeps


# What part of an entry is searchable, in plain words: on the search page and in the API's docs.
SEARCHABLE = (
    f"An entry is searched whole up to {HEAD + TAIL:,} characters of its text; a longer one by its "
    f"first {HEAD:,} and its last {TAIL:,} characters (where a long tool output or test log ends), "
    f"not what lies between. A line over {SCAN_PARSE_LIMIT // 2**20} MB is too long to read whole: "
    f"it is searched by its first {LONG_LINE_LIMIT // 1024} KB only."
)


def entry_text(entry: Any) -> str:
    """The searchable text of a tape entry: its kind and name, then the strings of its payload
    (message content and parts, tool calls and arguments, results, anchor states, event data,
    errors), bounded as text.payload_text bounds them."""
    head = f"{entry.kind} {entry.name}".strip()
    if not entry.readable:
        return f"{head} {entry.problem}\n{entry.preview}"[:LIMIT]
    if entry.truncated:
        return long_line_text(head, entry.preview)
    return payload_text(head, entry.payload)


def long_line_text(head: str, raw: str) -> str:
    """The searchable text of a line too long to parse, `raw` the start of it that was read: the
    string values in it, in order (not its keys, nor the values of text.SKIP_KEYS, nor blobs),
    at most LONG_LINE_LIMIT characters."""
    out, size, skip = [head], len(head), False
    for value, key in json_head.strings(raw):
        if key:
            skip = value in SKIP_KEYS
            continue
        if skip:
            skip = False
            continue
        if value and not is_blob(value):
            out.append(value)
            size += len(value) + 1
            if size >= LONG_LINE_LIMIT:
                break
    return "\n".join(out)[:LONG_LINE_LIMIT]
