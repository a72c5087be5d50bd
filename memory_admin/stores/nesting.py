"""How deep an agent's JSON document may nest before Tapeview refuses it (plain Python, no Django)."""

from __future__ import annotations

import json
from collections.abc import Callable

from .model import StoreError

# Python's parser, and every recursive walk after it (rendering, JS-style rewriting, the lone
# surrogate clean-up), runs out of stack on deep values: a hand-edited or corrupted file must
# become a StoreError the user can read, never a RecursionError that ends the request. The limit
# is far beyond what an agent writes (a few levels), far below what those walks survive.
MAX_DEPTH = 100


def parse(raw: bytes, what: str, loads: Callable[[bytes], object] | None = None) -> object:
    """`loads(raw)` (default: UTF-8 JSON); StoreError if the document nests deeper than MAX_DEPTH.

    The parser's own ValueError (invalid JSON or UTF-8) is left to the caller to word.
    """
    try:
        doc = loads(raw) if loads else json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise _too_deep(what) from None
    if too_deep(doc):
        raise _too_deep(what)
    return doc


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and objects nest more than `limit` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if level > limit:
            return True
        stack.extend((child, level + 1) for child in children)
    return False


def _too_deep(what: str) -> StoreError:
    return StoreError(f"{what} nests more than {MAX_DEPTH} levels deep: Tapeview neither shows nor edits it")
