"""The search API's answer as a person reads it: plain snippets with offsets, tape labels, copies
folded and counted, and the total number of matching entries."""

from __future__ import annotations

import html
import shutil
from pathlib import Path

import pytest

from tapeview.search import engine
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.fixture
def yachiyo(settings, tmp_path: Path) -> Tape:
    shutil.copytree(FIXTURES / "yachiyo", tmp_path / "yachiyo")
    settings.TAPEVIEW_SOURCES = f"ya=yachiyo:{tmp_path / 'yachiyo' / 'data'}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return Tape.objects.get(source="ya", name="sess-zh-prefs-0001")


def test_a_search_answers_exactly_these_fields(reader, yachiyo) -> None:
    body = reader.get("/api/search", q="蓝色").json()
    assert set(body) == {"items", "next_cursor", "total", "total_capped", "total_exact", "total_note"}
    assert (body["total"], body["total_capped"], body["next_cursor"]) == (22, False, None)
    user = next(h for h in body["items"] if h["tape_id"] == yachiyo.key and h["pos"] == 1)
    assert user == {
        "tape_id": yachiyo.key,
        "tape_label": yachiyo.label,
        "host": yachiyo.host,
        "source": "ya",
        "pos": 1,
        "kind": "message",
        "role": "user",
        "date": "2026-11-22T01:38:14.932Z",
        "snippet": user["snippet"],
        "highlights": user["highlights"],
        "copies": 5,
        "identical": [],
        "score": user["score"],
    }
    assert "蓝色，我每天早上七点起床。" in user["snippet"]
    assert sum(1 + h["copies"] for h in body["items"]) == body["total"]
    assert {h["role"] for h in body["items"] if h["kind"] != "message"} == {None}


def test_snippets_are_plain_text_and_the_offsets_point_at_the_matched_words(reader, yachiyo) -> None:
    for q, word in (("蓝色", "蓝色"), ("ADR-007", "ADR-007"), ('"blue dog"', "blue dog")):
        items = reader.get("/api/search", q=q).json()["items"]
        assert items
        for hit in items:
            assert "<mark>" not in hit["snippet"] and html.unescape(hit["snippet"]) == hit["snippet"]
            assert hit["highlights"] and all(0 <= s < e <= len(hit["snippet"]) for s, e in hit["highlights"])
            assert {hit["snippet"][s:e].lower() for s, e in hit["highlights"]} == {word.lower()}


def test_agent_text_comes_back_as_written_not_escaped(reader, served) -> None:
    path = served["samples"] / "session_realistic.jsonl"
    line = '{"id": 98, "kind": "message", "payload": {"role": "user", "content": "if a < b && c > \\"d\\": xyzzy"}, "meta": {}, "date": "2026-11-23T08:00:00+00:00"}\n'
    with path.open("a", encoding="utf-8") as f:
        f.write(line)
    discovery.sync()
    (hit,) = [h for h in reader.get("/api/search", q="xyzzy").json()["items"] if h["source"] == "samples"]
    assert hit["snippet"] == 'if a < b && c > "d": xyzzy' and hit["highlights"] == [[21, 26]]


def test_a_page_holds_hits_after_folding_and_the_cursor_goes_on_from_there(reader, yachiyo) -> None:
    every = reader.get("/api/search", q="蓝色").json()["items"]
    first = reader.get("/api/search", q="蓝色", limit=4).json()
    second = reader.get("/api/search", q="蓝色", limit=4, cursor=first["next_cursor"]).json()
    assert [len(first["items"]), len(second["items"]), second["next_cursor"]] == [4, 2, None]
    assert first["items"] + second["items"] == every
    assert first["total"] == second["total"] == 22


def test_the_total_says_when_it_stopped_counting(reader, yachiyo, monkeypatch) -> None:
    monkeypatch.setattr(engine, "COUNT_LIMIT", 10)
    body = reader.get("/api/search", q="蓝色").json()
    assert (body["total"], body["total_capped"]) == (10, True)
    assert reader.get("/api/search", q="蓝色", kinds="message").json()["total"] == 3


def test_memory_items_have_a_plain_snippet_and_offsets(reader, memory_sources) -> None:
    items = reader.get("/api/memory/search", q="蓝色").json()["items"]
    assert items
    for hit in items:
        assert set(hit) == {"store_id", "kind", "snippet", "highlights", "date", "score"}
        assert "<mark>" not in hit["snippet"]
        assert {hit["snippet"][s:e] for s, e in hit["highlights"]} == {"蓝色"}
