"""The search API: tape entries and memory items, with plain snippets and offsets, filters and pages."""

from __future__ import annotations

import pytest

from memory_admin.models import MemoryStore
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def realistic(served) -> Tape:
    return Tape.objects.get(source="samples", name="session_realistic")


HIT = {
    "tape_id",
    "tape_label",
    "host",
    "source",
    "pos",
    "kind",
    "role",
    "date",
    "snippet",
    "highlights",
    "copies",
    "score",
    "identical",
}


def test_search_finds_entries_with_a_plain_snippet_and_offsets_that_link_to_the_entry(
    reader, realistic
) -> None:
    body = reader.get("/api/search", q="中文", tape=realistic.key).json()
    assert [h["pos"] for h in body["items"]] and body["next_cursor"] is None
    hit = next(h for h in body["items"] if h["pos"] == 91)
    assert set(hit) == HIT
    assert (hit["tape_id"], hit["tape_label"], hit["source"]) == (realistic.key, realistic.label, "samples")
    assert (hit["kind"], hit["role"]) == ("message", "assistant")
    assert [hit["snippet"][start:end] for start, end in hit["highlights"]] == ["中文"]
    assert "<mark>" not in hit["snippet"]
    entry = reader.get(f"/api/tapes/{hit['tape_id']}/entries/{hit['pos']}").json()
    assert "中文" in str(entry["payload"])


def test_search_filters_by_source_kind_and_dates(reader, realistic) -> None:
    assert reader.get("/api/search", q="fs_read", source="nope").json()["items"] == []
    kinds = {h["kind"] for h in reader.get("/api/search", q="README", kinds="tool_call").json()["items"]}
    assert kinds == {"tool_call"}
    assert reader.get("/api/search", q="中文", until="2000-01-01").json()["items"] == []
    assert reader.get("/api/search", q="中文", since="2000-01-01").json()["items"]


def test_search_results_come_in_pages_by_cursor(reader, realistic) -> None:
    every = [
        (h["tape_id"], h["pos"])
        for h in reader.get("/api/search", q="README", order="time", limit=500).json()["items"]
    ]
    seen, cursor = [], None
    while True:
        params = {"q": "README", "order": "time", "limit": 4, **({"cursor": cursor} if cursor else {})}
        page = reader.get("/api/search", **params).json()
        seen += [(h["tape_id"], h["pos"]) for h in page["items"]]
        if not (cursor := page["next_cursor"]):
            break
    assert len(every) > 4 and seen == every


@pytest.mark.parametrize(
    "params", [{}, {"q": ""}, {"since": "yesterday", "q": "x"}, {"q": "x", "order": "best"}]
)
def test_a_bad_search_is_422(reader, served, params) -> None:
    r = reader.get("/api/search", **params)
    assert r.status_code == 422 and isinstance(r.json()["detail"], list)


@pytest.mark.parametrize("q", ['"', "*", "NEAR(", "'); --", "%"])
def test_a_hostile_query_is_an_answer_not_an_error(reader, served, q) -> None:
    assert reader.get("/api/search", q=q).status_code == 200
    assert reader.get("/api/memory/search", q=q).status_code == 200


def test_memory_search_finds_long_term_memory(reader, memory_sources) -> None:
    body = reader.get("/api/memory/search", q="Pixel").json()
    hit = next(h for h in body["items"] if h["kind"] == "nanobot.memory")
    assert set(hit) == {"store_id", "kind", "snippet", "highlights", "date", "score"}
    assert {hit["snippet"][start:end] for start, end in hit["highlights"]} == {"Pixel"}
    assert MemoryStore.objects.get(key=hit["store_id"]).title == "MEMORY.md"
    only = reader.get("/api/memory/search", q="Pixel", store=hit["store_id"]).json()["items"]
    assert only and {h["store_id"] for h in only} == {hit["store_id"]}
    family = reader.get("/api/memory/search", q="Pixel", kind="nanobot").json()["items"]
    assert family and all(h["kind"].startswith("nanobot.") for h in family)
