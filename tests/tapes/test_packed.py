"""The packed offset index (tapes.packing, tapes.rows, tapes.fastlane): what every page asks of it
stays true across chunk boundaries, appends and the bulk path's shortcut."""

from __future__ import annotations

import itertools
import random
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tapeview.demodata.bub import bub_line, bub_turns
from tapeview.sources import parse_sources
from tapeview.tapes import discovery, fastlane, index, rows
from tapeview.tapes.models import EntryChunk, Tape
from tapeview.tapes.packing import CHUNK
from tapeview.tapes.rows import Match
from tests.conftest import FIXTURES
from tests.tapes.indexed import indexed

pytestmark = pytest.mark.django_db


def session(path: Path, entries: int, seed: str = "packed") -> None:
    """A generated Bub session with the real turn pattern: messages, tool calls, runs, handoffs."""
    start = datetime(2026, 11, 1, tzinfo=UTC)
    turns = bub_turns(random.Random(seed), 1, start, handoff_every=40)
    path.write_text("".join(bub_line(e) for e in itertools.islice(turns, entries)), encoding="utf-8")


def test_the_bulk_path_indexes_exactly_what_the_full_path_does(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "bub"
    shutil.copytree(FIXTURES / "bub", root)
    session(root / "a1b2c3d4e5f60718__generated.jsonl", 3 * CHUNK)
    fast = indexed("fast", root)
    # Every line down the full path: the agent's own reading rules (sources.bub_lines), an Entry each.
    monkeypatch.setattr(fastlane, "PLAIN_KINDS", frozenset())
    slow = indexed("slow", root)
    assert fast.keys() == slow.keys() and len(fast) >= 8
    for rel in fast:
        assert fast[rel] == slow[rel], rel
    assert len(fast["a1b2c3d4e5f60718__generated.jsonl"][2]) == 3 * CHUNK


def test_appends_across_chunk_boundaries_keep_every_position(tmp_path: Path) -> None:
    path = tmp_path / "a1b2c3d4e5f60718__grows.jsonl"
    session(path, CHUNK + 300)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[: CHUNK - 5]))
    discovery.sync(parse_sources([f"t=bub:{tmp_path}"]))
    t = Tape.objects.get(name=path.stem)
    with path.open("ab") as f:  # the agent appends across the first chunk's end, a few lines at a time
        for at in range(CHUNK - 5, len(lines), 97):
            f.write(b"".join(lines[at : at + 97]))
            f.flush()
            index.refresh(t)
    t.refresh_from_db()
    every = rows.of(t).all()
    assert [r.pos for r in every] == list(range(1, len(lines) + 1))
    assert [r.length for r in every] == [len(line) for line in lines]
    assert every[-1].offset + every[-1].length == t.indexed_offset == path.stat().st_size
    assert list(EntryChunk.objects.filter(tape=t).order_by("first_pos").values_list("count", flat=True)) == [
        CHUNK,
        len(lines) - CHUNK,
    ]
    # Questions that straddle the boundary answer as one tape.
    middle = rows.of(t).after(CHUNK - 3).head(6)
    assert [r.pos for r in middle] == list(range(CHUNK - 2, CHUNK + 4))
    assert [r.pos for r in rows.of(t).before(CHUNK + 3).tail(5)] == list(range(CHUNK - 2, CHUNK + 3))
    messages = [r for r in every if r.kind == "message"]
    assert rows.of(t).where(kinds=("message",)).count() == len(messages)
    assert rows.of(t).starting(CHUNK - 50).through(CHUNK + 50).where(kinds=("message",)).count() == len(
        [r for r in messages if CHUNK - 50 <= r.pos <= CHUNK + 50]
    )
    users = [r.pos for r in messages if r.name == "user"]
    assert rows.of(t).where(kinds=("message",), names=("user",)).first_pos() == users[0]
    assert rows.of(t).where(kinds=("message",), names=("user",)).last_pos() == users[-1]
    assert [r.pos for r in rows.of(t).at([1, CHUNK, CHUNK + 1, len(lines) + 5])] == [1, CHUNK, CHUNK + 1]


def test_every_filter_agrees_with_the_rows_it_selects(tmp_path: Path) -> None:
    path = tmp_path / "a1b2c3d4e5f60718__filters.jsonl"
    session(path, 2 * CHUNK + 100, seed="filters")
    discovery.sync(parse_sources([f"t=bub:{tmp_path}"]))
    t = Tape.objects.get(name=path.stem)
    every = rows.of(t).all()
    when = every[len(every) // 2].date
    cases = [
        (Match(errors=True), lambda r: r.is_error),
        (
            Match(kinds=("event",), name_prefix="loop."),
            lambda r: r.kind == "event" and r.name.startswith("loop."),
        ),
        (Match(name_contains="ool"), lambda r: "ool" in r.name),
        (Match(not_kinds=("message", "event")), lambda r: r.kind not in ("message", "event")),
        (Match(longer_than=400), lambda r: r.length > 400),
        (Match(at_most=200, readable=True), lambda r: r.length <= 200 and r.readable),
        (Match(min_id=1000), lambda r: r.entry_id is not None and r.entry_id >= 1000),
        (Match(ids=(3, 5000, 7)), lambda r: r.entry_id in (3, 5000, 7)),
        (Match(since=when), lambda r: r.date is not None and r.date >= when),
        (Match(context=False), lambda r: not r.context),
    ]
    for match, wanted in cases:
        expected = [r for r in every if wanted(r)]
        assert rows.of(t).where(match).all() == expected, match
        assert rows.of(t).where(match).count() == len(expected), match
        assert rows.of(t).where(match).tail(3) == expected[-3:], match
    either = rows.of(t).any_of(Match(errors=True), Match(kinds=("anchor",))).all()
    assert either == [r for r in every if r.is_error or r.kind == "anchor"]


def test_a_chunk_read_while_the_indexer_grows_it_is_found_with_its_new_entries(tmp_path: Path) -> None:
    path = tmp_path / "a1b2c3d4e5f60718__live.jsonl"
    session(path, 300)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:200]))
    discovery.sync(parse_sources([f"t=bub:{tmp_path}"]))
    t = Tape.objects.get(name=path.stem)
    question = rows.of(t).where(kinds=("message",))
    # A page has read the chunk's summary; the agent appends and another request indexes it.
    (summary,) = question._summaries(t, descending=False, opened=False)
    with path.open("ab") as f:
        f.write(b"".join(lines[200:]))
    index.refresh(t)
    chunk = rows._open(t, summary)
    assert chunk is not None and chunk.count == 300
    assert question.count() == sum(1 for r in rows.of(t).all() if r.kind == "message")
