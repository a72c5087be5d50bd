"""Entries as text: tool output on its lines, fences nothing inside can close."""

from __future__ import annotations

import pytest

from tapeview.tapes.transcript import arguments_text, fence, output_text


@pytest.mark.parametrize(
    ("content", "failed", "text"),
    [
        ("a\nb", False, "a\nb"),
        ("literal \\n kept", False, "literal \\n kept"),  # code that prints "\n" is not a failure
        ("Error('x\\ny')", True, "Error('x\ny')"),
        ("real\nand \\n escaped", True, "real\nand \\n escaped"),  # real newlines: written as meant
        ({"a": 1, "b": [True, None, "x"]}, False, "a: 1\nb:\n  - true\n  - null\n  - x"),
        ({"m": "one\ntwo"}, False, "m: one\n  two"),
        ({}, False, ""),
        ([], False, ""),
        (None, False, ""),
        (3, False, "3"),
    ],
)
def test_tool_output_as_text(content, failed: bool, text: str) -> None:
    assert output_text(content, failed) == text


def test_output_nested_too_deeply_is_not_a_crash() -> None:
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    assert output_text(deep) == "(not shown: nested too deeply)"


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        ('{"path": "a"}', '{\n  "path": "a"\n}'),
        ("not json", "not json"),
        ('"s"', "s"),
        ({"k": 1}, '{\n  "k": 1\n}'),
    ],
)
def test_arguments_are_decoded_when_they_decode(arguments, text: str) -> None:
    assert arguments_text(arguments) == text


def test_a_fence_is_longer_than_any_backticks_inside() -> None:
    assert fence("plain") == "```\nplain\n```\n\n"
    assert fence("has ```` inside", "json") == "`````json\nhas ```` inside\n`````\n\n"
