"""The head of a line too long to parse: its strings and escapes read as a full parse would read them."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tapeview.sources import json_head


@pytest.mark.parametrize(
    ("escaped", "text"),
    [
        ("plain", "plain"),
        (r"\u4e2d\u6587", "中文"),
        (r"caf\u00E9", "café"),  # upper-case hex
        (r"\ud83d\ude00 ok", "😀 ok"),  # a pair of halves: one character
        (r"\ud83d alone", "\ufffd alone"),  # a lone high half
        (r"\ude00", "\ufffd"),  # a lone low half
        (r"\ude00\ud83d", "\ufffd\ufffd"),  # halves the wrong way round
        (r"line\none\ttab\r\b\f", "line\none\ttab\r\b\f"),
        (r"a \"quote\" \\ and \/", 'a "quote" \\ and /'),
        (r"\\u4e2d", r"\u4e2d"),  # a backslash written before a u
        (r"\ud83d\\ude00", "\ufffd\\ude00"),  # a half, then a backslash written before a u
        (r"cut \u00", "cut "),  # the head ends inside an escape
        (r"cut \u", "cut "),
        ("cut \\", "cut "),
        (r"cut \\", "cut \\"),  # a whole escaped backslash at the end is kept
        (r"\uzz", "uzz"),  # not an escape JSON has: the character after the backslash
        ("raw \ud800 half", "raw \ufffd half"),  # a raw surrogate (read with surrogatepass)
    ],
)
def test_unescape_reads_what_json_would_and_survives_a_cut(escaped: str, text: str) -> None:
    assert json_head.unescape(escaped) == text


def test_strings_in_a_head_name_their_keys_and_read_the_open_last_one() -> None:
    head = '{"kind": "tool_result", "payload": {"results": ["line one\\nline \\"two\\" \\u00e9t\\u00'
    assert list(json_head.strings(head)) == [
        ("kind", True),
        ("tool_result", False),
        ("payload", True),
        ("results", True),
        ('line one\nline "two" ét', False),
    ]


def test_strings_of_a_head_with_no_string_are_none() -> None:
    assert list(json_head.strings("")) == []
    assert list(json_head.strings("[1, 2.5, true, null")) == []


@given(st.text())
def test_unescape_of_a_whole_json_string_is_its_value(value: str) -> None:
    body = json.dumps(value)[1:-1]  # ensure_ascii: every character past ASCII as \u escapes
    expected = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    assert json_head.unescape(body) == expected
