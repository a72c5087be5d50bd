"""Two message sequences aligned, so that an operator sees what one agent did that the other did not.

Each side's messages, tool calls and anchors become steps keyed by what they are (a role and the
start of its text, the tools called, an anchor's name); difflib's SequenceMatcher lines the keys
up. A long tape is aligned a page at a time: the first `limit` steps of each side after a position.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from tapeview.sources import Entry, TapeNotFound, reader
from tapeview.sources.model import content_text

from . import rows as index_rows
from .comparison import Side
from .timeline import read_rows

STEP_KINDS = ("message", "tool_call", "anchor")
PAGE = 100
MAX_PAGE = 500
TEXT = 80  # characters of a message shown
KEY_TEXT = 40  # characters of a message its key compares
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Step:
    pos: int
    kind: str  # message | tool_call | anchor
    role: str  # a message's role; "tool" for a tool call; "anchor"
    text: str  # what is shown: the start of a message, the tools called, an anchor's name
    is_error: bool
    key: tuple[str, str]


@dataclass(frozen=True)
class Pair:
    """One line of the alignment: equal (the same step on both sides), or what differs."""

    op: str  # equal | replace | delete (only in a) | insert (only in b)
    a: Step | None
    b: Step | None


@dataclass(frozen=True)
class Alignment:
    pairs: list[Pair]
    next_a: int | None  # the last position shown of each side: the next page starts after it
    next_b: int | None
    more: bool  # either side has steps past this page
    equal: int
    differ: int


def steps(side: Side, after: int | None = None, limit: int = PAGE) -> tuple[list[Step], bool]:
    """Up to `limit` steps of the side after `after`; whether more follow."""
    selection = index_rows.of(side.tape).starting(side.low).through(side.high).after(after)
    found = selection.where(kinds=STEP_KINDS).head(limit + 1)
    more = len(found) > limit
    found = found[:limit]
    try:
        entries = read_rows(side.tape, found)
    except TapeNotFound:
        entries = []
    source = reader(side.tape.kind)
    out = [_step(source, e) for e in entries]
    return out, more


def _step(source: Any, e: Entry) -> Step:
    if e.kind == "anchor":
        return Step(e.pos, "anchor", "anchor", e.name, e.is_error, ("anchor", e.name))
    if e.kind == "tool_call":
        called = source.tool_calls(e) if e.readable and not e.truncated else []
        names = ", ".join(str(c["name"]) for c in called)
        return Step(e.pos, "tool_call", "tool", names or "(tool call)", e.is_error, ("tool", names))
    payload = e.payload if isinstance(e.payload, dict) else {}
    said = content_text(payload.get("content", payload.get("text")))
    text = " ".join(said.split()) if not e.truncated else "(too big to show)"
    shown = text if len(text) <= TEXT else text[: TEXT - 1] + "…"
    # Digits vary between runs of the same work (dates, ids, counts): they do not tell steps apart.
    key = _DIGITS.sub("#", text[:KEY_TEXT].lower())
    role = e.name or "message"
    return Step(e.pos, "message", role, shown, e.is_error, (role, key))


def align(
    a: Side, b: Side, after_a: int | None = None, after_b: int | None = None, limit: int = PAGE
) -> Alignment:
    """The next `limit` steps of each side, aligned by their keys."""
    left, more_a = steps(a, after_a, limit)
    right, more_b = steps(b, after_b, limit)
    matcher = difflib.SequenceMatcher(None, [s.key for s in left], [s.key for s in right], autojunk=False)
    pairs: list[Pair] = []
    equal = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            equal += i2 - i1
            pairs += [Pair("equal", left[i1 + k], right[j1 + k]) for k in range(i2 - i1)]
            continue
        # A replaced run is shown row by row; the longer side's rest stands alone.
        span = max(i2 - i1, j2 - j1)
        for k in range(span):
            x = left[i1 + k] if i1 + k < i2 else None
            y = right[j1 + k] if j1 + k < j2 else None
            op = "replace" if x and y else "delete" if x else "insert"
            pairs.append(Pair(op, x, y))
    next_a = left[-1].pos if left else after_a
    next_b = right[-1].pos if right else after_b
    return Alignment(pairs, next_a, next_b, more_a or more_b, equal, len(pairs) - equal)
