"""The compiled text walk (search/_text.c) makes, character for character, the text search/text.py's
walk makes: of every entry of every real sample, of generated JSON under small and real budgets, and
of what only a Python caller can give it (subclasses, keys that are not strings). And what FTS5 is
given of a text (`fts_body`), compiled and in Python, is the same."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapeview.search import text
from tapeview.sources import reader

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FAMILIES = ("bub", "nanobot", "yachiyo", "araliya")
SAMPLES = sorted((family, p) for family in FAMILIES for p in (FIXTURES / family).rglob("*") if p.is_file())

pytestmark = pytest.mark.skipif(text.native is None, reason="the compiled walk is not built (make setup)")


@contextlib.contextmanager
def limits(limit: int, depth: int, tail: int | None = None) -> Iterator[None]:
    """Both walks under another budget (`limit` characters: a quarter of them the tail, unless
    given) and depth, restored after."""
    tail = limit // 4 if tail is None else tail
    saved = text.HEAD, text.TAIL, text.MAX_DEPTH
    text.HEAD, text.TAIL, text.MAX_DEPTH = limit - tail, tail, depth
    text.native.configure(limit - tail, tail, text.GAP, depth, text.SKIP_KEYS, text.cjk_ranges())
    try:
        yield
    finally:
        text.HEAD, text.TAIL, text.MAX_DEPTH = saved
        text.native.configure(saved[0], saved[1], text.GAP, saved[2], text.SKIP_KEYS, text.cjk_ranges())


def test_the_walks_agree_on_every_entry_of_the_real_samples() -> None:
    compared = 0
    for family, path in SAMPLES:
        try:
            entries = list(reader(family).scan(path, 0, 1))
        except Exception:  # not one of this family's tapes (a memory file, a sessions index)
            continue
        for e in entries:
            if not e.readable:
                continue
            head = f"{e.kind} {e.name}".strip()
            native = text.native.payload_text(head, e.payload)
            assert native == text.python_payload_text(head, e.payload), (path.name, e.pos)
            compared += 1
    assert compared > 1000


SPACES = st.sampled_from([" ", "\n", "\t", "\x0b", "\x1c", "\x85", "\u2003", "\u3000", "x", "_"])
STRINGS = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "data:", "data:image/png;base64,AAAA", "Data:x", "dat", "日本語のテキスト"]),
    # Long runs with (or without) a space somewhere: the blob test looks at the first 1,000 only.
    st.builds(lambda a, s, b: "a" * a + s + "b" * b, st.integers(990, 1010), SPACES, st.integers(0, 30)),
)
HEADS = st.one_of(st.sampled_from(["", "k", "event loop.step"]), st.text(max_size=30))
KEYS = st.one_of(st.sampled_from(sorted(text.SKIP_KEYS)), st.text(max_size=8))
SCALARS = st.one_of(STRINGS, st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=6), st.dictionaries(KEYS, inner, max_size=6)),
    max_leaves=40,
)


def joined_then_cut(head: str, payload: object) -> str:
    """What both walks must make, by its definition: every string of the payload joined (a string
    whole, however long), then, if longer than HEAD + TAIL, its first HEAD and last TAIL characters."""
    found = [head]

    def walk(value: object, depth: int, top: bool = False) -> None:
        if isinstance(value, str):
            if value and not text.is_blob(value) and (top or type(value) is str):
                found.append(value)
        elif isinstance(value, (dict, list)) and (top or depth <= text.MAX_DEPTH):
            items = (
                value if isinstance(value, list) else [v for k, v in value.items() if k not in text.SKIP_KEYS]
            )
            for item in items:
                walk(item, depth + 1)

    walk(payload, 0, top=True)
    full = "\n".join(found)
    if len(full) <= text.HEAD + text.TAIL:
        return full
    return full[: text.HEAD] + text.GAP + full[len(full) - text.TAIL :]


@settings(max_examples=400)
@given(
    head=HEADS,
    payload=JSON,
    limit=st.integers(1, 120),
    tail=st.one_of(st.none(), st.integers(0, 40)),
    depth=st.integers(0, 4),
)
def test_the_walks_agree_on_generated_json_under_small_budgets(head, payload, limit, tail, depth) -> None:
    with limits(limit, depth, None if tail is None else min(tail, limit)):
        python = text.python_payload_text(head, payload)
        assert text.native.payload_text(head, payload) == python
        assert python == joined_then_cut(head, payload)


LONG = st.builds(
    lambda word, n, last: f"{word} " * n + last,
    st.sampled_from(["ok", "日本", "x_y"]),
    st.integers(0, 9000),
    st.text(max_size=20),
)


@settings(max_examples=100)
@given(
    head=HEADS,
    payload=st.recursive(
        st.one_of(STRINGS, LONG),
        lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(KEYS, inner, max_size=5)),
        max_leaves=12,
    ),
)
def test_the_walks_agree_on_long_generated_json_under_the_real_budget(head, payload) -> None:
    python = text.python_payload_text(head, payload)
    assert text.native.payload_text(head, payload) == python == joined_then_cut(head, payload)


@pytest.mark.parametrize("size", [16_000, 16_001, 50_000, 1_000_000])
def test_the_walks_keep_the_same_end_of_a_long_tool_output(size) -> None:
    output = "start " + "x" * (size - 30) + " AssertionError"
    for payload in ({"results": [output], "call_id": "c"}, [{"a": "one"}, output, {"b": ["two"]}], output):
        assert text.native.payload_text("tool_result", payload) == text.python_payload_text(
            "tool_result", payload
        )


@settings(max_examples=200)
@given(head=HEADS, payload=JSON)
def test_the_walks_agree_on_generated_json_under_the_real_budget(head, payload) -> None:
    assert text.native.payload_text(head, payload) == text.python_payload_text(head, payload)


def test_a_head_as_long_as_the_budget_leaves_no_room_for_a_string_payload() -> None:
    with limits(10, 24, tail=0):
        assert text.native.payload_text("k" * 10, "abc") == "k" * 10 + text.GAP
        assert text.native.payload_text("k" * 9, "abc") == "k" * 9 + "\n" + text.GAP
        for payload, head in itertools.product(
            ("abcdefghij", "abc", "data:x", ""), ("k" * 9, "k" * 10, "k" * 13)
        ):
            assert text.native.payload_text(head, payload) == text.python_payload_text(head, payload)
            assert text.payload_text(head, payload) == text.python_payload_text(head, payload)


class Mapping(dict):
    def values(self):  # what Python's walk takes of a dict
        return ["only this"]


class Items(list):
    pass


class Text(str):
    pass


@pytest.mark.parametrize(
    "payload",
    [
        Mapping(a="not this"),
        {"a": [Items(["x"])]},
        {1: "a key that is not a string"},
        {"a": Text("a str subclass in a dict")},
        Text("a str subclass alone"),
    ],
    ids=["dict subclass", "list subclass", "int key", "str subclass child", "str subclass"],
)
def test_what_is_not_plain_json_is_left_to_python_and_comes_out_the_same(payload) -> None:
    native = text.native.payload_text("event x", payload)
    python = text.python_payload_text("event x", payload)
    assert native is None or native == python
    assert text.payload_text("event x", payload) == python
    if isinstance(payload, Mapping):
        assert python == "event x\nonly this"


# Every CJK range's edges and their neighbours, the markers, and what lies between.
EDGES = sorted({c + d for c in text.cjk_ranges() for d in (-1, 0, 1)})
CHARACTERS = st.one_of(
    st.sampled_from([chr(c) for c in EDGES] + ["\x00", "\x01", "\x02", "\x03", "\x04", " ", "é", "😀"]),
    st.characters(),
)


@settings(max_examples=500)
@given(st.lists(CHARACTERS, max_size=30).map("".join))
def test_what_fts5_is_given_of_a_text_is_the_same_compiled_and_in_python(value: str) -> None:
    assert text.native.fts_body(value) == text.python_fts_body(value)


def test_what_fts5_is_given_of_the_real_samples_is_the_same_compiled_and_in_python() -> None:
    for _, path in SAMPLES:
        value = path.read_bytes().decode("utf-8", "replace")
        assert text.native.fts_body(value) == text.python_fts_body(value), path.name
    assert text.native.fts_body("日本 \x01x") == "\x01日\x01\x01本\x01  x"


def test_every_line_of_the_real_bub_sample_is_read_in_c(monkeypatch) -> None:
    """The search pass's lane (search/lane.py) leaves a plain line to Python only where C is unsure:
    none of the real sample's, anchors included; and C makes the docs Python makes of them."""
    from tapeview.search import lane

    path = FIXTURES / "bub" / "session_realistic.jsonl"
    docs, offset = [], 0
    for pos, raw in enumerate(path.read_bytes().splitlines(keepends=True), 1):
        docs.append(text.native.plain_doc(orjson.loads(raw), pos, offset, len(raw)))
        offset += len(raw)
    assert len(docs) == 97 and None not in docs
    assert [doc[3] for doc in docs].count("anchor") == 4
    monkeypatch.setattr(lane, "native", None)
    assert docs == list(lane.tape_docs("bub", path))


@pytest.mark.parametrize(
    ("date", "taken"),
    [
        ("2024-02-29T01:37:38.123456+00:00", True),
        ("2000-02-29T01:37:38.123456+00:00", True),
        ("1900-02-29T01:37:38.123456+00:00", False),
        ("2026-02-28T23:59:59.999999+00:00", True),
        ("2026-11-22T01:37:38.000000+00:00", False),  # isoformat() would write it shorter
        ("2026-11-22T01:37:38.123456+01:00", False),
    ],
)
def test_c_takes_the_dates_bub_writes_and_leaves_the_rest_to_python(date: str, taken: bool) -> None:
    obj = {"id": 1, "kind": "message", "payload": {"role": "user", "content": "hi"}, "date": date}
    doc = text.native.plain_doc(obj, 1, 0, 10)
    assert (doc is not None) is taken
    if taken:
        assert doc == (1, 0, 10, "message", "user", "message user\nhi", date[:26])


def test_c_takes_exactly_the_kinds_the_lane_takes() -> None:
    from tapeview.search import lane

    assert frozenset(text.native.PLAIN_KINDS) == lane.PLAIN_KINDS
    assert lane._compiled() is text.native.plain_doc


def test_a_kind_taken_on_one_side_only_leaves_every_line_to_python(monkeypatch) -> None:
    """Were lane.PLAIN_KINDS changed without _text.c (or the other way round), C would take or refuse
    lines Python reads otherwise: then no line is read in C, and the docs are Python's."""
    from tapeview.search import lane

    path = FIXTURES / "bub" / "session_realistic.jsonl"
    expected = list(lane.tape_docs("bub", path))
    taken = []

    def spy(*args):
        taken.append(args)
        return text.native.plain_doc(*args)

    class Native:
        PLAIN_KINDS = text.native.PLAIN_KINDS
        plain_doc = staticmethod(spy)

    monkeypatch.setattr(lane, "native", Native)
    assert list(lane.tape_docs("bub", path)) == expected
    assert len(taken) == 97  # agreeing, C is asked for every line
    taken.clear()
    monkeypatch.setattr(lane, "PLAIN_KINDS", lane.PLAIN_KINDS - {"error"})
    assert list(lane.tape_docs("bub", path)) == expected  # (the sample has no error line)
    assert taken == []


@pytest.mark.parametrize("at", [0, 1, 7, 8, 9, 15, 16, 17, 23])
@pytest.mark.parametrize("marker", ["\x00", "\x01", "\x02", "\x03"])
def test_what_fts5_is_given_of_ascii_text_with_a_marker_anywhere_is_the_same_compiled_and_in_python(
    at: int, marker: str
) -> None:
    """ASCII text is looked through eight characters at a time: a marker in any place of those eight."""
    value = "".join(chr(0x04 + (i * 37) % 0x7C) for i in range(24))
    marked = value[:at] + marker + value[at + 1 :]
    assert text.native.fts_body(marked) == text.python_fts_body(marked) == marked.replace(marker, " ")
    assert text.native.fts_body(value) is value  # nothing to change: the same string
