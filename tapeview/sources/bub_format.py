"""Entries encoded exactly as Bub writes its lines, refused when they would not read back the same."""

from __future__ import annotations

import json

# Deeper than this, an entry could not be read back (orjson stops at 1,024 levels).
MAX_DEPTH = 200


def encode(entries: list[dict]) -> bytes:
    """Lines exactly as Bub writes them: default separators, raw UTF-8, one newline each.

    ValueError for what would not read back as written (NaN, an infinity, an integer past 64
    bits, a lone surrogate): a line the readers refuse would be lost, and its id reused.
    """
    for e in entries:
        _plain(e)
    try:
        text = "".join(json.dumps(e, ensure_ascii=False, allow_nan=False) + "\n" for e in entries)
        return text.encode("utf-8")
    except (ValueError, UnicodeEncodeError) as exc:
        raise ValueError(f"an entry cannot be written as JSON that reads back the same: {exc}") from None


def _plain(value: object, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise ValueError(f"an entry nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        raise ValueError("an entry holds an integer wider than 64 bits")
    if isinstance(value, dict):
        for item in value.values():
            _plain(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _plain(item, depth + 1)
