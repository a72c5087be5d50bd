"""JSON as JavaScript's `JSON.stringify(value, null, 2)` writes it, byte for byte (plain Python)."""

from __future__ import annotations

import json
import re
from decimal import Decimal

_SURROGATE = re.compile("[\ud800-\udfff]")
# yachiyo rewrites memory.json whole with JSON.stringify: writing it the same way means an
# unchanged document gives the same bytes, so a diff of the file shows only what an edit changed.
# The writer recurses once per level: callers parse with stores.nesting, which bounds the depth.


def stringify(value: object, depth: int = 0) -> str:
    """`JSON.stringify(value, null, 2)`: JS key order, JS number format, lone surrogates escaped."""
    pad, inner = "\n" + "  " * depth, "\n" + "  " * (depth + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        keys = sorted((k for k in value if _is_index(k)), key=int) + [k for k in value if not _is_index(k)]
        items = (f"{_js_string(k)}: {stringify(value[k], depth + 1)}" for k in keys)
        return "{" + inner + ("," + inner).join(items) + pad + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[" + inner + ("," + inner).join(stringify(v, depth + 1) for v in value) + pad + "]"
    if isinstance(value, str):
        return _js_string(value)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    raise TypeError(f"cannot write {type(value).__name__} to memory.json")


def _is_index(key: str) -> bool:
    # JS lists integer-like keys (array indices) first, ascending, whatever the insertion order.
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) < 2**32 - 1


def _js_string(text: str) -> str:
    # A high and a low half side by side are one character to JavaScript (its strings are UTF-16).
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    out = json.dumps(text, ensure_ascii=False)  # the same escapes as JSON.stringify...
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)  # ...which escapes lone halves


def _js_number(number: float) -> str:
    """Number.prototype.toString: the shortest digits (as repr), laid out by ECMAScript's rules."""
    if number != number or number in (float("inf"), float("-inf")):
        return "null"
    if number == 0:
        return "0"
    sign, parts = "-" * (number < 0), Decimal(repr(abs(number))).normalize().as_tuple()
    digits = "".join(map(str, parts.digits))
    k, n = len(digits), len(digits) + int(parts.exponent)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
