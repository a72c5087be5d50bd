"""Snippets as plain text with the offsets of the query's matches, and the HTML the page makes of them."""

from __future__ import annotations

import pytest

from tapeview.search.snippets import marked, marked_html
from tapeview.search.text import MARK, START, STOP, terms


def matches(q: str, snippet: str, head: str = "") -> tuple[str, list[str]]:
    plain, spans = marked(snippet, terms(q), head)
    assert all(0 <= start < end <= len(plain) for start, end in spans)
    return plain, [plain[start:end] for start, end in spans]


def test_a_snippet_is_plain_text_with_offsets_of_its_matches():
    snippet = f'x < y && {START}蓝{MARK}色{STOP} is "blue" {START}蓝{MARK}色{STOP}'
    assert matches("蓝色", snippet) == ('x < y && 蓝色 is "blue" 蓝色', ["蓝色", "蓝色"])


def test_offsets_count_characters_not_bytes():
    plain, spans = marked("日本語のテキスト README 🐕 fs_read", terms("readme fs_read"))
    assert spans == ((9, 15), (18, 25)) and plain[18:25] == "fs_read"


def test_the_offsets_come_from_the_query_not_the_engines_marks():
    # ts_headline marks every word of a phrase wherever it is: 色 in 颜色 is no match of 蓝色.
    pg_style = f"颜{MARK}{START}色{STOP}{MARK}是{MARK}{START}蓝{STOP}{MARK}{MARK}{START}色{STOP}"
    assert matches("蓝色", pg_style) == ("颜色是蓝色", ["蓝色"])
    assert matches('"blue dog"', f"a {START}blue{STOP} {START}dog{STOP}, a blue cat") == (
        "a blue dog, a blue cat",
        ["blue dog"],
    )


def test_white_space_runs_become_one_space():
    assert matches("blue", "  first line\n\n  - blue\tdog  ") == ("first line - blue dog", ["blue"])


@pytest.mark.parametrize(
    ("q", "snippet", "found"),
    [
        ("中 文", "中文", ["中文"]),  # matches that touch are one
        ("fs read", "fs_read and fs-read", ["fs_read", "fs-read"]),
        ("a b", "a b", ["a", "b"]),  # a space keeps them apart
        ("pars*", "the Parser parses", ["Parser", "parses"]),
        ("cafe", "Café au lait", ["Café"]),
        ("README", "READMEs", []),
        ("cafe", "İstanbul ǅ café", ["café"]),  # letters that lowercase or fold to two come before it
        ("οδος", "ΟΔΟΣ.Α", ["ΟΔΟΣ"]),  # a word's case as its own: Σ ends the word, though a letter follows
        ("do* blue", "a blue dog, blue", ["blue", "dog", "blue"]),  # a prefix and a word
        ('"a a b"', "a a a b a", ["a a b"]),  # a phrase found where its first word repeats
    ],
)
def test_what_counts_as_a_match(q, snippet, found):
    assert matches(q, snippet)[1] == found


@pytest.mark.parametrize(
    ("snippet", "head", "plain"),
    [
        ("message user\n记住：蓝色", "message user", "记住：蓝色"),  # the page shows the kind apart
        ("event loop.start\n蓝色 README", "event loop.start", "event loop.start 蓝色 README"),  # matched
        ("message user", "message user", "message user"),  # nothing but the head
        ("…message user 蓝色", "message user", "…message user 蓝色"),  # not the start of the entry
    ],
)
def test_the_entrys_kind_and_name_are_left_out_unless_matched(snippet, head, plain):
    q = "蓝色 loop" if "loop" in head else "蓝色"
    assert matches(q, snippet, head)[0] == plain


def test_the_html_of_a_snippet_escapes_the_text_and_marks_the_matches():
    plain, spans = marked('<script>alert(1)</script> blue & "more"', terms("blue"))
    assert (
        marked_html(plain, spans)
        == "&lt;script&gt;alert(1)&lt;/script&gt; <mark>blue</mark> &amp; &quot;more&quot;"
    )
    plain, spans = marked("<b>x</b>", terms("x"))
    assert marked_html(plain, spans) == "&lt;b&gt;<mark>x</mark>&lt;/b&gt;"
