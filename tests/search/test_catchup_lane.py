"""The search pass's reading lane makes, byte for byte, the docs that reading each line as an Entry makes:
over the real sample tapes, over hostile lines, and over generated ones; with its plain lines read in C
(search/_text.c) and all in Python."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tapeview.search import backends, catchup, lane
from tapeview.search.docs import LAST_POS, SHIFT, date_text, tags
from tapeview.search.entries import entry_text
from tapeview.sources import Entry, reader
from tapeview.sources.model import SCAN_PARSE_LIMIT
from tapeview.tapes.models import Tape, db_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BUB_TAPES = sorted(p for p in (FIXTURES / "bub").rglob("*") if p.is_file())
ENGINES = [backends.SQLite(), backends.PostgreSQL()]
DATE = "2026-11-22T01:37:38.956160+00:00"


def reference_rows(backend, tape: Tape, entries: Iterable[Entry]) -> list[tuple]:
    """The search pass's rows as it made them before the lane: an Entry per line (catchup.entry_rows
    of 2026-11-24, kept here as the definition the lane must match)."""
    last: dict[int, int] = {}
    rows = []
    for e in entries:
        if e.pos > LAST_POS:
            continue
        text = entry_text(e)
        if e.kind == "system":
            digest = hash(text)
            if last.get(tape.pk) == digest:
                text = e.kind
            last[tape.pk] = digest
        kind, name = e.kind, e.name
        if "\x00" in kind or "\x00" in name:
            kind, name = db_text(kind), db_text(name)
        fields = ("entry", tape.pk, e.pos, None, "", tape.source, kind, name[:200], date_text(e.date))
        rows.append(
            as_made(
                backend, backend.row(tape.pk << SHIFT | e.pos, text, tags(tape.source, kind, name), *fields)
            )
        )
    return rows


def as_made(backend, row: tuple) -> tuple:
    """A tape entry's row as the engine's `row` makes it, in the form the pass makes (its `entry`): on
    SQLite the columns of the staging table (writes.TABLE), on PostgreSQL the same row."""
    if isinstance(backend, backends.SQLite):
        return row[0], row[1], row[2], row[4], row[5], row[8], row[9], row[10], row[11]
    return row


def lane_rows(backend, tape: Tape, path: Path, start: int = 0, first_pos: int = 1) -> list[tuple]:
    catchup._last_system.pop(tape.pk, None)
    return catchup.entry_rows(backend, tape, lane.tape_docs("bub", path, start, first_pos))


def assert_same_docs(path: Path, start: int = 0, first_pos: int = 1) -> None:
    tape = Tape(pk=7, source="real", kind="bub", path=str(path))
    entries = list(reader("bub").scan(path, start, first_pos))
    docs = list(lane.tape_docs("bub", path, start, first_pos))
    # Where each doc is, as the pass commits its progress by it.
    assert [d[:3] for d in docs] == [(e.pos, e.offset, e.length) for e in entries]
    for backend in ENGINES:
        assert lane_rows(backend, tape, path, start, first_pos) == reference_rows(backend, tape, entries)


@pytest.fixture(autouse=True, params=["compiled", "python"])
def reading(request, monkeypatch) -> str:
    """Each test twice: plain lines read in C where it is built (search/_text.c), and all in Python,
    as on a machine without a C compiler (the reference rows then too)."""
    if request.param == "python":
        monkeypatch.setattr(lane, "native", None)
        monkeypatch.setattr("tapeview.search.text.native", None)
    elif lane.native is None:
        pytest.skip("search/_text.c is not built (make setup)")
    return request.param


@pytest.mark.parametrize("path", BUB_TAPES, ids=lambda p: p.name)
def test_the_lane_makes_the_docs_an_entry_makes_of_every_real_sample_tape(path: Path) -> None:
    assert_same_docs(path)


def test_the_lane_makes_the_same_docs_from_the_middle_of_a_tape() -> None:
    path = FIXTURES / "bub" / "session_realistic.jsonl"
    offset = len(b"".join(path.read_bytes().splitlines(keepends=True)[:40]))
    assert_same_docs(path, offset, 41)


def line(**fields: object) -> str:
    return json.dumps(
        {"id": 1, "kind": "message", "payload": {"role": "user", "content": "hi"}, "date": DATE} | fields
    )


HOSTILE = [
    '{"id": 1, "kind": "message"',  # unfinished
    "not json at all",
    line() + line(id=2),  # glued after a crash
    '{"id": 3, "kind": "message", "payload": {"content": NaN, "x": "a NaN beside"}, "date": "' + DATE + '"}',
    '{"id": 4, "kind": "message", "payload": {"content": "lone \\ud800 surrogate"}, "date": "' + DATE + '"}',
    '{"id": 5, "kind": "message", "payload": {"content": "paired \\ud83d\\ude00 surrogates"}, "date": "'
    + DATE
    + '"}',
    line(payload={"role": "us\x00er", "content": "a NUL \x00 in the role and the text"}),
    line(kind="mess\x00age"),
    line(kind="event", payload={"name": "loop.\x00start", "data": {"x": "\x00"}}),
    line(payload={"content": "markers \x01 \x02 \x03 and CJK 中文字 and ａｂｃ and é"}),
    line(payload={"deep": json.loads("[" * 40 + '"deep down"' + "]" * 40), "also": "shallow"}),
    "[" * 2000 + "]" * 2000,  # deeper than any reader follows
    '{"id": 6, "kind": "message", "payload": ' + "[" * 1100 + "]" * 1100 + ', "date": "' + DATE + '"}',
    line(payload={"content": "x" * 20_000}),  # past the text limit, no space: a blob
    line(payload={"content": "word " * 5_000}),  # past the text limit
    line(payload={"content": "data:image/png;base64,AAAA", "caption": "a picture"}),
    line(payload=["a", "list"]),
    line(payload="a string"),
    line(payload=None),
    '["a", "list"]',
    "42",
    "null",
    '"a string"',
    line(kind=7),
    line(kind=""),
    line(kind="weird.kind", payload={"name": "n", "text": "odd"}),
    line(kind="tool call"),
    line(kind="anchor", payload={"name": ["not", "a", "string"], "state": {"summary": "s"}}),
    line(kind="anchor", payload={"name": "phase/two  ", "state": {"summary": "trailing spaces"}}),
    line(kind="event", payload={"name": "n" * 300, "data": {"status": "error"}}),
    line(kind="error", payload={"kind": "not_found", "message": "gone"}),
    line(kind="system", payload={"content": "the prompt"}),
    line(kind="system", payload={"content": "the prompt"}),  # a copy: its kind alone
    line(kind="system", payload={"content": "the prompt", "id": "other"}),  # the same text again
    line(kind="system", payload={"content": "another prompt"}),
    line(
        kind="tool_call", payload={"calls": [{"id": "c1", "function": {"name": "bash", "arguments": "{}"}}]}
    ),
    line(kind="tool_result", payload={"results": [{"kind": "e", "message": "failed"}, "ok", 3, None]}),
    line(payload={"role": 5, "content": "a number for a role"}),
    '{"id": 9, "kind": "message", "payload": {"role": "user", "content": "dup", "content": "keys"}, "date": "'
    + DATE
    + '", "kind": "event"}',
    line(id=True),
    line(id="5"),
    line(id=5.0),
    line(id=2**63 - 1),
    line(id=2**63),
    line(id=-(2**63)),
    line(id=-(2**63) - 1),
    line(id=2**64),
    line(id=2**70),
    line(payload={"content": "a wide int", "n": 2**70}),
    line(date="garbage"),
    line(date="2026-11-22T01:37:38"),  # no zone: UTC
    line(date="2026-11-22T01:37:38Z"),
    line(date="2026-11-22T03:37:38.5+02:00"),
    line(date="2026-11-22T01:37:38.000000+00:00"),
    line(date="2026-11-22T01:37:38.123+00:00"),
    line(date="2026-W47-6T01:37:38.123456+00:00"),  # a week date: the same length as Bub's
    line(date="2026-11-22 01:37:38.123456+00:00"),
    line(date="2026-11-22T01:37:38.123456-00:00"),
    line(date="2026-11-22T01:37:38.123456+00:00:00"),
    line(date="2026-11-31T01:37:38.123456+00:00"),  # no such day
    line(date="2026-11-22T25:37:38.123456+00:00"),
    line(date="２０２６-11-22T01:37:38.123456+00:00"),
    line(date="2026-11-22"),
    line(date="2026-13-22T01:37:38+00:00"),
    # Bub's own form, at the edges of what a calendar holds: C takes the valid ones, Python the rest.
    line(date="2024-02-29T01:37:38.123456+00:00"),  # a leap day
    line(date="2000-02-29T01:37:38.123456+00:00"),
    line(date="1900-02-29T01:37:38.123456+00:00"),  # no leap day in 1900
    line(date="2026-02-29T01:37:38.123456+00:00"),
    line(date="2026-04-31T01:37:38.123456+00:00"),
    line(date="2026-12-31T23:59:59.999999+00:00"),
    line(date="2026-01-01T00:00:00.000001+00:00"),
    line(date="0001-01-01T00:00:00.000001+00:00"),
    line(date="0000-01-01T00:00:00.000001+00:00"),  # no year 0
    line(date="9999-12-31T23:59:59.999999+00:00"),
    line(date="2026-00-10T01:37:38.123456+00:00"),
    line(date="2026-11-00T01:37:38.123456+00:00"),
    line(date="2026-11-22T24:00:00.123456+00:00"),
    line(date="2026-11-22T23:60:00.123456+00:00"),
    line(date="2026-11-22T23:59:60.123456+00:00"),
    line(date="2026-11-22T01:37:38.123456+01:00"),
    line(date="2026-11-22t01:37:38.123456+00:00"),
    line(date=1763775458),
    line(date=None, timestamp=1763775458.25),
    line(date=None, timestamp=True),
    line(date=None, timestamp=1e300),
    line(date=None),
    line(meta={"context": False}),
    '{"id": 8, "kind": "message", "payload": {"content": "invalid \xff utf-8"}, "date": "' + DATE + '"}',
    line(payload={"content": "a\u2028line\u2029separator"}),
    "   ",
    "",
]


def test_the_lane_makes_the_docs_an_entry_makes_of_hostile_lines(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    raw = b"".join(
        (text.encode("utf-8", "surrogateescape") if "\xff" not in text else text.encode("latin-1")) + b"\n"
        for text in HOSTILE
    )
    path.write_bytes(raw)
    assert_same_docs(path)


def test_the_lane_makes_the_docs_an_entry_makes_of_a_line_too_long_to_parse(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    huge = line(id=2, payload={"content": "y " * (SCAN_PARSE_LIMIT // 2)})
    path.write_text(line() + "\n" + huge + "\n" + "{" * (SCAN_PARSE_LIMIT + 10) + "\n" + line(id=4) + "\n")
    assert_same_docs(path)
    assert [d[3] for d in lane.tape_docs("bub", path)] == ["message", "message", "unreadable", "message"]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(["id", "role", "name", "content", "data", "x", "signature"]), inner, max_size=4
        )
    ),
    max_leaves=20,
)
FIELD = {
    "id": st.integers(min_value=-(2**65), max_value=2**65) | JSON,
    "kind": st.sampled_from([*lane.PLAIN_KINDS, "odd", ""]) | JSON,
    "payload": st.dictionaries(
        st.sampled_from(["role", "name", "content", "data", "results", "calls", "id"]), JSON, max_size=4
    )
    | JSON,
    "date": st.sampled_from([DATE, "2026-11-22T01:37:38", "2026-11-22T01:37:38Z", "no date"])
    | st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat(timespec="microseconds"))
    | JSON,
    "timestamp": st.floats(min_value=-1e12, max_value=1e12) | JSON,
}


@given(st.lists(st.fixed_dictionaries({}, optional=FIELD), min_size=1, max_size=8))
def test_the_lane_makes_the_docs_an_entry_makes_of_generated_lines(
    tmp_path_factory, objects: list[dict]
) -> None:
    path = tmp_path_factory.mktemp("generated") / "tape.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    assert_same_docs(path)
