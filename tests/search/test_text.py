"""The searchable text of entries and memory, and queries made safe for both engines (no database)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_admin.stores.model import Snapshot
from tapeview.search.entries import LONG_LINE_LIMIT, entry_text
from tapeview.search.memory_text import Doc, memory_docs
from tapeview.search.text import _TOKEN as TOKEN
from tapeview.search.text import (
    GAP,
    HEAD,
    LIMIT,
    MARK,
    START,
    STOP,
    TAIL,
    folded,
    fts_body,
    fts_query,
    pg_body,
    pg_query,
    pg_words,
    spaced_cjk,
    terms,
    word_spans,
    words,
)
from tapeview.sources import bub
from tapeview.sources.model import Entry

FIXTURES = Path(__file__).parent.parent / "fixtures"


def sample_entry(pos: int) -> Entry:
    return next(e for e in bub.scan(FIXTURES / "bub" / "session_realistic.jsonl") if e.pos == pos)


def entry(kind: str, payload: object, name: str = "", **extra) -> Entry:
    return Entry(pos=1, offset=0, length=1, id=1, kind=kind, name=name, payload=payload, **extra)


def test_every_cjk_character_is_set_apart():
    assert spaced_cjk("蓝色abc日本語") == " 蓝  色 abc 日  本  語 "
    assert spaced_cjk("ユーザー 한국") == " ユ  ー  ザ  ー   한  국 "
    assert spaced_cjk("plain text_with_parts") == "plain text_with_parts"


def test_words_split_identifiers_and_cjk_like_the_tokenizer():
    assert words("context_length_exceeded fs_read") == ["context", "length", "exceeded", "fs", "read"]
    assert words("Café src/parser.py 中文abc") == ["cafe", "src", "parser", "py", "中", "文", "abc"]


def test_words_of_ascii_text_are_the_words_fts5_finds():
    """Every ASCII character between two words: `words` (translate() for ASCII text) splits where
    FTS5's own tokenizer does, or joins as it does."""
    text = " ".join(f"a{chr(c)}b{c} Q{chr(c)}{chr(c)}z" for c in range(1, 128))
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    db.execute("INSERT INTO t (body) VALUES (?)", [text])
    found = [term for (term,) in db.execute("SELECT term FROM v ORDER BY offset")]
    assert words(text) == found
    assert len(found) > 2 * 127  # most characters do split


def test_the_words_of_a_text_folded_whole_are_its_words_folded_each_alone():
    """Every character of the BMP, and every other that folds, beside a letter and a CJK character:
    where `word_spans` folds the whole text at once (each character folding to one, no capital
    sigma), its words lie and fold as the text's words folded one by one, as snippets mark them."""
    one = [
        chr(c)
        for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF
        and c != 0x3A3
        and len(folded(chr(c))) == 1
        and (c < 0x10000 or folded(chr(c)) != chr(c))
    ]
    text = "".join(f" {c} 中{c}x" for c in one)
    assert len(folded(text)) == len(text)  # folded whole, not word by word
    assert word_spans(text) == [(m.start(), m.end(), folded(m.group())) for m in TOKEN.finditer(text)]


@pytest.mark.parametrize(
    ("q", "fts", "pg"),
    [
        ("蓝色", '"蓝 色"', "('蓝' <-> '色')"),
        ("图", '"图"', "'图'"),
        ("日本語", '"日 本 語"', "('日' <-> '本' <-> '語')"),
        ("context_length_exceeded", '"context length exceeded"', "('context' <-> 'length' <-> 'exceeded')"),
        ("fs_read README", '"fs read" AND "readme"', "('fs' <-> 'read') & 'readme'"),
        (
            '"naive CSV parser" git',
            '"naive csv parser" AND "git"',
            "('naive' <-> 'csv' <-> 'parser') & 'git'",
        ),
        ("pars*", '"pars"*', "'pars':*"),
        ("NEAR(a b) OR NOT", '"near a" AND "b" AND "or" AND "not"', "('near' <-> 'a') & 'b' & 'or' & 'not'"),
    ],
)
def test_queries_become_phrases_that_must_all_match(q, fts, pg):
    assert fts_query(q) == fts
    assert pg_query(q) == pg


@pytest.mark.parametrize("q", ['"', "*", ")", "'", '" * ( ) : ^ - + & | ! < > \\ %', "", "   ", "_"])
def test_a_query_of_only_syntax_characters_has_no_terms(q):
    assert terms(q) == []
    assert fts_query(q) == ""
    assert pg_query(q) == ""


@pytest.mark.parametrize(
    "q", ["NEAR(", '"unbalanced phrase', "a\"b'c", "col:umn", "x OR", "'; DROP TABLE x; --"]
)
def test_syntax_characters_never_reach_the_engines(q):
    for expression in (fts_query(q), pg_query(q)):
        inner = expression.replace('" AND "', " ").replace("' & '", " ").replace("' <-> '", " ")
        assert not set(inner.strip("\"'()*:")) & set("\"'():;-^")


def test_bodies_keep_the_text_readable_once_the_marker_is_dropped():
    text = "颜色是蓝色 in src/parser.py, fs_read"
    assert fts_body(text).replace(MARK, "") == text
    assert pg_body(text).replace(MARK, "") == text
    assert pg_words(text) == "颜 色 是 蓝 色 in src parser py fs read"


def test_markers_in_agent_text_are_removed_before_indexing():
    assert START not in fts_body(f"a{START}b{STOP}c") and STOP not in pg_body(f"a{STOP}b")


def test_entry_text_of_a_message_with_parts_keeps_the_text_not_the_image():
    text = entry_text(sample_entry(90))
    assert text.startswith("message user")
    assert "中文也可以" in text
    assert "base64" not in text and "image_url" not in text


def test_entry_text_of_a_tool_call_has_names_and_arguments():
    text = entry_text(sample_entry(20))
    assert "fs_read" in text and "README.md" in text and "git log --oneline -3" in text
    assert "call_rd_02" not in text  # ids are noise


def test_entry_text_of_results_anchors_events_and_errors():
    assert "not a git repository" in entry_text(sample_entry(21))
    anchor = entry_text(sample_entry(70))
    assert anchor.startswith("anchor auto_handoff/context_overflow") and "context_length_exceeded" in anchor
    assert "tape.search" in entry_text(sample_entry(94))
    assert "Anchor 'phase/missing' was not found." in entry_text(sample_entry(96))


def test_entry_text_of_an_unreadable_line_is_its_problem_and_preview():
    bad = Entry(
        3, 0, 9, None, "unreadable", readable=False, problem="malformed JSON", preview='{"id": 3, "ki'
    )
    assert entry_text(bad) == 'unreadable malformed JSON\n{"id": 3, "ki'


def test_entry_text_is_bounded_however_big_the_payload():
    huge = entry("tool_result", {"results": ["word " * 3_000_000, {"deep": ["x " * 100] * 100_000}]})
    assert len(entry_text(huge)) == HEAD + len(GAP) + TAIL


def test_entry_text_up_to_the_limit_is_whole():
    output = ("ok " * LIMIT)[: LIMIT - len("tool_result\n")]
    assert entry_text(entry("tool_result", {"results": [output]})) == "tool_result\n" + output
    assert len(entry_text(entry("tool_result", {"results": [output + "x"]}))) == HEAD + len(GAP) + TAIL


@pytest.mark.parametrize("size", [LIMIT, 20_000, 50_000, 1_000_000])
def test_entry_text_of_a_long_tool_output_keeps_its_start_and_its_end(size):
    output = "first words\n" + "ok " * (size // 3) + "\nAssertionError: boom"
    text = entry_text(entry("tool_result", {"results": [output], "call_id": "c1"}))
    assert text.startswith("tool_result\nfirst words\nok ok")
    assert text.endswith("ok ok \nAssertionError: boom")
    assert text[HEAD : HEAD + len(GAP)] == GAP and len(text) == HEAD + len(GAP) + TAIL
    assert "assertionerror" in words(text)


def test_entry_text_takes_its_tail_from_the_last_strings_of_the_payload():
    payload = {
        "results": ["x " * 10_000, {"id": "skipped", "out": ["middle " * 1000, "last one"]}],
        "date": "d",
    }
    text = entry_text(entry("tool_result", payload))
    assert text.endswith("middle middle \nlast one")
    assert "skipped" not in text


def test_entry_text_of_a_line_too_long_to_parse_is_the_strings_in_its_head():
    head = '{"id": 9, "kind": "tool_result", "date": "2026-11-22", "payload": {"results": ["line one\\nline \\"two\\" \\u00e9t\\u00e9 and on'
    big = Entry(9, 0, 6_000_000, 9, "tool_result", truncated=True, preview=head)
    assert entry_text(big) == 'tool_result\ntool_result\nline one\nline "two" été and on'
    cut = Entry(9, 0, 6_000_000, 9, "tool_result", truncated=True, preview=head + "\\u00")
    assert entry_text(cut) == entry_text(big)
    endless = Entry(9, 0, 6_000_000, 9, "tool_result", truncated=True, preview='{"a": "' + "word " * 100_000)
    assert len(entry_text(endless)) == LONG_LINE_LIMIT


def test_entry_text_survives_odd_payloads():
    assert entry_text(entry("event", None, "ping")) == "event ping"
    nested: dict = {}
    node = nested
    for _ in range(500):
        node["next"] = {}
        node = node["next"]
    assert entry_text(entry("event", nested, "deep")) == "event deep"
    assert entry_text(entry("event", {"data": {"n": 3, "ok": True, "s": "yes"}}, "x")) == "event x\nyes"


def test_memory_text_without_items_is_one_doc():
    docs = memory_docs(Snapshot("v1", "# Memory\n\n- Has a cat named Pixel\n"))
    assert docs == [Doc("", "# Memory\n\n- Has a cat named Pixel\n")]


def test_a_long_memory_text_is_split_into_parts_at_line_ends():
    docs = memory_docs(Snapshot("v1", ("a line of memory\n" * 3000)))
    assert len(docs) > 1 and all(len(d.text) <= LIMIT for d in docs)
    assert [d.item for d in docs[:2]] == ["part 1", "part 2"]


def test_memory_items_each_become_a_doc():
    from memory_admin.stores.araliya_kv import KvPair
    from memory_admin.stores.yachiyo_memory import MemoryEntry

    entry_ = MemoryEntry(
        "m1",
        "用户最喜欢的颜色是蓝色",
        ("颜色", "蓝色"),
        "2026-11-20T10:00:00.000Z",
        "2026-11-21T10:00:00.000Z",
        None,
        None,
    )
    docs = memory_docs(Snapshot("v1", "rendered", [entry_, KvPair("fav", "blue")]))
    assert docs[0] == Doc("m1", "用户最喜欢的颜色是蓝色\n颜色 蓝色", datetime(2026, 11, 21, 10, tzinfo=UTC))
    assert docs[1] == Doc("fav", "fav: blue")
