"""A long entry is searchable by its start and by its end (a test log's failure is at its end), and
a line too long to parse by the head of it that is read; the search page and the README say so."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps as django_apps
from django.urls import reverse

from tapeview.search import catchup, text
from tapeview.sources.model import DISPLAY_PREVIEW_BYTES, SCAN_PARSE_LIMIT
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

SIZES = {2: 5_000, 3: 20_000, 4: 50_000, 5: 1_000_000}  # pos: characters of the tool result


def line(pos: int, kind: str, payload: dict) -> str:
    entry = {
        "id": pos,
        "kind": kind,
        "payload": payload,
        "meta": {},
        "date": "2026-11-22T01:37:38.962778+00:00",
    }
    return json.dumps(entry)


def run_output(size: int, last: str) -> str:
    """A test run's output of about `size` characters whose failure is its last line."""
    passing = "tests/test_app.py::test_it_passes PASSED\n"
    return "platform linux startword\n" + passing * (size // len(passing)) + f"E   {last}: boom\n"


@pytest.fixture
def long_tape(served) -> Tape:
    return make_long_tape(served)


def make_long_tape(served: dict) -> Tape:
    """A Bub tape of long tool results (at pos 2-5, SIZES) and a line too long to parse (pos 6),
    indexed and made searchable."""
    lines = [line(1, "message", {"role": "user", "content": "run the tests"})]
    lines += [
        line(pos, "tool_result", {"results": [run_output(size, f"failure{pos}")]})
        for pos, size in SIZES.items()
    ]
    big = "headword " + "middle words here " * (SCAN_PARSE_LIMIT // 9) + "lastword"  # about 8 MB
    lines.append(line(6, "tool_result", {"results": [big]}))
    (served["samples"] / "long.jsonl").write_text("\n".join(lines) + "\n")
    discovery.sync()
    catchup.catch_up()
    return Tape.objects.get(source="samples", name="long")


@pytest.mark.parametrize("pos", sorted(SIZES))
def test_a_word_at_the_end_of_a_long_tool_result_is_found_on_the_search_page(
    viewer_client, long_tape, pos
) -> None:
    page = viewer_client.get(reverse("search:search"), {"q": f"failure{pos}"}).content.decode()
    assert f">#{pos}</a>" in page
    assert f"<mark>failure{pos}</mark>" in page
    assert "search-behind" not in page


@pytest.mark.parametrize("pos", sorted(SIZES))
def test_a_word_at_the_end_of_a_long_tool_result_is_found_by_the_api_with_its_highlight(
    reader, long_tape, pos
) -> None:
    body = reader.get("/api/search", q=f"failure{pos}", tape=long_tape.key).json()
    assert [h["pos"] for h in body["items"]] == [pos]
    hit = body["items"][0]
    assert [hit["snippet"][start:end] for start, end in hit["highlights"]] == [f"failure{pos}"]


def test_a_long_tool_result_is_still_found_by_its_first_words(reader, long_tape) -> None:
    body = reader.get("/api/search", q="startword", tape=long_tape.key).json()
    assert body["total"] == len(SIZES)  # (the longer ones folded under the first: they start alike)


def test_a_line_too_long_to_parse_is_found_by_a_word_in_its_head(viewer_client, reader, long_tape) -> None:
    body = reader.get("/api/search", q="headword", tape=long_tape.key).json()
    assert [(h["pos"], h["kind"]) for h in body["items"]] == [(6, "tool_result")]
    assert [body["items"][0]["snippet"][s:e] for s, e in body["items"][0]["highlights"]] == ["headword"]
    page = viewer_client.get(reverse("search:search"), {"q": "headword"}).content.decode()
    assert "<mark>headword</mark>" in page
    # Only its head is read (the first DISPLAY_PREVIEW_BYTES): its last word is not searchable.
    assert reader.get("/api/search", q="lastword", tape=long_tape.key).json()["items"] == []


def test_the_search_page_says_what_part_of_an_entry_is_searchable(viewer_client, served) -> None:
    page = viewer_client.get(reverse("search:search")).content.decode()
    assert "first 12,000 and its last 4,000 characters" in page
    assert f"first {DISPLAY_PREVIEW_BYTES // 1024} KB" in page


def old_rule(head: int, tail: int) -> None:
    """Both text walks (Python's and the compiled one) cut to `head` and `tail` characters."""
    text.HEAD, text.TAIL = head, tail
    if text.native is not None:
        text.native.configure(head, tail, text.GAP, text.MAX_DEPTH, text.SKIP_KEYS, text.cjk_ranges())


def test_an_upgraded_database_makes_its_long_docs_again(reader, served) -> None:
    """Docs made by the old rule (an entry's first 16,000 characters) are made again after the
    migration: meanwhile the entry is found by its start, then by its end too."""
    saved = text.HEAD, text.TAIL
    old_rule(16_000, 0)
    try:
        tape = make_long_tape(served)
    finally:
        old_rule(*saved)
    assert reader.get("/api/search", q="failure4", tape=tape.key).json()["items"] == []
    upgrade = importlib.import_module("tapeview.search.migrations.0005_heads_and_tails")
    upgrade.redo(django_apps, None)
    assert catchup.lag() >= 6  # every tape's entries, this one's six among them
    assert reader.get("/api/search", q="startword", tape=tape.key).json()["total"] == len(SIZES)
    catchup.catch_up()
    assert catchup.lag() == 0
    assert [h["pos"] for h in reader.get("/api/search", q="failure4", tape=tape.key).json()["items"]] == [4]
