"""Opaque list cursors for the API: URL-safe base64 of the last item's sort key (plain Python)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

import orjson

MAX_CURSOR = 1000  # characters; a real cursor is a few dozen
FOREIGN = "this cursor is not one this API handed out"


class BadCursor(ValueError):
    """A cursor this API did not hand out (or one for another list or sort)."""


def pack(value: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(value)).rstrip(b"=").decode()


def unpack(cursor: str) -> Any:
    """What `pack` put in a cursor; BadCursor for anything it could not have made."""
    try:
        if len(cursor) > MAX_CURSOR:
            raise ValueError
        return orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, binascii.Error):
        raise BadCursor(FOREIGN) from None


def encode(key: dict[str, Any]) -> str:
    return pack(key)


def decode(cursor: str, expect: dict[str, type | tuple[type, ...]]) -> dict[str, Any]:
    """The key inside a cursor; every field of `expect` must be there with its type."""
    key = unpack(cursor)
    if not isinstance(key, dict):
        raise BadCursor(FOREIGN)
    for name, kind in expect.items():
        value = key.get(name)
        # bool is an int to Python, never to a cursor; ints stay in the database's 64-bit range.
        if not isinstance(value, kind) or isinstance(value, bool):
            raise BadCursor(FOREIGN)
        if isinstance(value, int) and not 0 <= value < 2**62:
            raise BadCursor(FOREIGN)
    return key


def offset_page(items: Sequence, cursor: str | None, limit: int) -> tuple[list, str | None]:
    """A page of a short list or query, the cursor being the offset of the next item."""
    start = decode(cursor, {"o": int})["o"] if cursor else 0
    page = list(items[start : start + limit + 1])
    return page[:limit], encode({"o": start + limit}) if len(page) > limit else None
