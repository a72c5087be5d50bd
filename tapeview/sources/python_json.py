"""JSON lines as the Python agents read them (Bub and nanobot use `json.loads`).

`json.loads` also takes NaN and Infinity, lone surrogate escapes ("\\ud800") and integers of any
width. orjson refuses the first two, and reads an integer past 64 bits as a float without a word.
`loads` gives what `json.loads` gives, at orjson's speed for every other line, except that a lone
surrogate, which no UTF-8 text can hold (a page, the database, a search), becomes U+FFFD.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import orjson

LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # a surrogate escape: paired, or alone
# 19 digits in a row or more: perhaps an integer past what orjson reads as one. Found by turning
# every digit into "0" and all else into " " (a regex search costs as much as the parse itself).
_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))
_WIDE_INT = b"0" * 19


def loads(raw: bytes) -> Any:
    """The value of one JSON text; ValueError (or RecursionError) when json.loads refuses it too."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return fallback(raw)
    return exact(value, raw)


def exact(value: Any, raw: bytes) -> Any:
    """orjson's `value` of `raw`, or json.loads' when `raw` may hold an integer past 64 bits (which
    orjson reads as a float)."""
    if _WIDE_INT not in raw.translate(_DIGITS):
        return value
    try:
        return json.loads(raw)
    except RecursionError:  # orjson follows 1,024 levels, json.loads a few less
        return value


def fallback(raw: bytes) -> Any:
    """json.loads of a text orjson refused, lone surrogates made U+FFFD."""
    value = json.loads(raw.decode("utf-8"))
    return without_lone_surrogates(value) if LONE_SURROGATE.search(raw) else value


def without_lone_surrogates(obj: Any) -> Any:
    """`obj` with every lone surrogate (in keys and strings, at any depth) made U+FFFD."""
    if isinstance(obj, str):
        return obj.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(obj, dict):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in obj.items()}
    return [without_lone_surrogates(v) for v in obj] if isinstance(obj, list) else obj


TOKEN_LIMIT = 2**40  # no plausible token count reaches this (tapes/_lane.c keeps the same limit)


def is_count(value: object) -> bool:
    """Whether an agent wrote a usable token count: a non-negative int of a plausible size. Not a
    string, a float, a negative number or a hostile file's 2**70 (it would overflow the index's sums)."""
    return type(value) is int and 0 <= value < TOKEN_LIMIT


def count(value: object) -> int:
    """A token count an agent wrote, else 0 (see is_count)."""
    return value if is_count(value) else 0


def reports_usage(usage: object) -> bool:
    """Whether a Bub run's usage says anything: it gives a usable total or prompt count. One that
    gives neither (strings, negatives, 10**30) is as if absent: the tape shows its tokens unknown."""
    return type(usage) is dict and (
        is_count(usage.get("total_tokens")) or is_count(usage.get("prompt_tokens"))
    )


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON of what `loads` read, whatever its integers and its depth (orjson writes
    neither an integer past 64 bits nor 255 levels; json.dumps stops at Python's recursion limit)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return "".join(_json_parts(value)).encode()


class _Written(str):
    """Punctuation already written as JSON (a str of its own type, told apart from a value's strings)."""


def _json_parts(value: object) -> Iterator[str]:
    """Compact JSON of a value of any depth, by a stack of its own (orjson reads 1,024 levels)."""
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Written:
            yield item
        elif isinstance(item, dict):
            parts: list[object] = [_Written("{")]
            for n, (key, child) in enumerate(item.items()):
                named = json.dumps(str(key), ensure_ascii=False) + ":"
                parts += [_Written("," + named if n else named), child]
            stack += reversed([*parts, _Written("}")])
        elif isinstance(item, list):
            parts = [_Written("[")]
            for n, child in enumerate(item):
                parts += [_Written(","), child] if n else [child]
            stack += reversed([*parts, _Written("]")])
        else:
            yield json.dumps(item, ensure_ascii=False)
