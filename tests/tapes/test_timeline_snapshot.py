"""A timeline page asks the offset index a dozen questions about the same few chunks: it asks them of
one snapshot of the tape's rows (tapes.rows.Snapshot), which answers each as the index does and
reads each chunk once."""

from __future__ import annotations

import itertools
import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tapeview.demodata.bub import bub_line, bub_turns
from tapeview.sources import parse_sources
from tapeview.tapes import discovery, rows
from tapeview.tapes.models import Tape
from tapeview.tapes.packing import CHUNK
from tapeview.tapes.rows import Match

pytestmark = pytest.mark.django_db


@pytest.fixture
def tape(tmp_path: Path) -> Tape:
    """A generated Bub session of three chunks and a bit, with the real turn pattern and errors."""
    root = tmp_path / "bub"
    root.mkdir()
    turns = bub_turns(random.Random("snapshot"), 1, datetime(2026, 11, 1, tzinfo=UTC), handoff_every=40)
    lines = [bub_line(e) for e in itertools.islice(turns, 3 * CHUNK + 100)]
    (root / "a1b2c3d4e5f60718__snapshot.jsonl").write_text("".join(lines), encoding="utf-8")
    discovery.sync(parse_sources([f"gen=bub:{root}"]))
    found = Tape.objects.get(source="gen")
    assert found.entries == 3 * CHUNK + 100 and found.errors and found.anchors
    return found


def questions(tape_rows: rows.Rows) -> list:
    """What the timeline asks, and more: around chunk boundaries, narrowed every way it narrows."""
    answers = []
    for low, high in ((None, None), (CHUNK - 3, CHUNK + 3), (2 * CHUNK, None), (None, CHUNK + 1), (5, 7)):
        span = tape_rows.after(low).before(high)
        for narrowed in (
            span,
            span.where(errors=True),
            span.where(kinds=("anchor",)),
            span.where(kinds=("message",), readable=True).where(names=("user",)),
            span.where(Match(kinds=("message", "tool_call", "tool_result"), not_kinds=("tool_result",))),
            span.where(readable=False),
        ):
            answers += [narrowed.head(7), narrowed.tail(7), narrowed.count(), narrowed.exists()]
            answers += [narrowed.first(), narrowed.last(), narrowed.at([1, CHUNK, CHUNK + 1, 3 * CHUNK + 99])]
    return answers


def test_a_snapshot_answers_every_question_as_the_index_does(tape: Tape) -> None:
    assert questions(rows.snapshot(tape)) == questions(rows.of(tape))


def test_a_snapshot_reads_each_chunk_once_however_many_questions(tape: Tape) -> None:
    snapshot = rows.snapshot(tape)
    with CaptureQueriesContext(connection) as asked:
        questions(snapshot)
    # The summaries once, then each of the four chunks at most once.
    assert len(asked.captured_queries) <= 1 + 4


@pytest.mark.parametrize(
    "query",
    [f"?at={CHUNK + 2}", f"?at={2 * CHUNK}", f"?before={CHUNK + 1}", f"?after={CHUNK - 1}", "?end=1", ""],
)
def test_a_page_across_a_chunk_boundary_shows_what_the_index_says(
    viewer_client, tape: Tape, query: str, monkeypatch
) -> None:
    url, htmx = f"/tapes/{tape.key}/{query}", {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "entries"}
    through_snapshot = viewer_client.get(url, **htmx).content.decode()
    monkeypatch.setattr(rows, "snapshot", rows.of)  # every question asked of the index itself
    cache.clear()  # and the page drawn again, not taken from the cache
    asked_one_by_one = viewer_client.get(url, **htmx).content.decode()
    assert through_snapshot == asked_one_by_one
    shown = [int(p) for p in re.findall(r'id="e(\d+)"', through_snapshot)]
    assert len(shown) == 50 and shown == sorted(shown)
    assert "previous error" in through_snapshot or "next error" in through_snapshot


def test_a_page_in_the_middle_reads_the_chunks_it_shows_once(viewer_client, tape: Tape) -> None:
    with CaptureQueriesContext(connection) as asked:
        html = viewer_client.get(
            f"/tapes/{tape.key}/?at={CHUNK + 2}", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="entries"
        ).content.decode()
    assert f'id="e{CHUNK - 3}"' in html and f'id="e{CHUNK + 46}"' in html
    chunk_queries = [q for q in asked.captured_queries if "tapeview_entrychunk" in q["sql"]]
    # The summaries, the chunk before the boundary and the one after it; before the snapshot, the
    # page asked a question a query (eleven on this page), reading a chunk of arrays each time.
    assert len(chunk_queries) <= 3
