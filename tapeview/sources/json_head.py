"""The head of a JSON line too long to parse, cut anywhere: its strings and escapes read without a parse."""

from __future__ import annotations

import re
from collections.abc import Iterator

# A JSON string: its body (escapes whole), whether it is closed, whether it is a key. The head is cut
# anywhere, so the last string may be open.
_STRING = re.compile(r'"((?:[^"\\]|\\.)*+)(")?(\s*:)?', re.S)
# A pair of halves first, then one escape, then one cut short by the end of the head (read as nothing).
_ESCAPE = re.compile(
    r"\\(?:u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|u([0-9a-f]{4})|(?:u[0-9a-f]{0,3})?\Z|(.))", re.S | re.I
)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_SURROGATE = re.compile("[\ud800-\udfff]")


def strings(head: str) -> Iterator[tuple[str, bool]]:
    """Each string in `head` in order, its escapes read, and whether it is a key (a closed string
    before a colon). The last one may be open: a string the cut ends in is read up to the cut."""
    for m in _STRING.finditer(head):
        body, closed, colon = m.groups()
        yield unescape(body), bool(closed and colon)


def unescape(text: str) -> str:
    """`text` with its JSON escapes read: a pair of `\\uXXXX` halves is one character, a lone half
    or a raw surrogate U+FFFD (as sources.python_json reads them), an escape the cut ends in nothing,
    an unknown one (`\\x`) the character after the backslash."""
    if "\\" in text:
        text = _ESCAPE.sub(_read, text)
    return _SURROGATE.sub("\ufffd", text)


def _read(m: re.Match) -> str:
    high, low, code, other = m.groups()
    if high:
        return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)
    if code:
        point = int(code, 16)
        return "\ufffd" if 0xD800 <= point <= 0xDFFF else chr(point)
    return "" if other is None else _SIMPLE.get(other, other)
