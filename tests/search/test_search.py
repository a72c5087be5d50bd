"""Search over the real sample tapes and memory stores, on whichever database the index is in."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from django.urls import reverse

from memory_admin.models import MemoryStore
from tapeview.search import engine, feed
from tapeview.search.models import SearchedTape
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def realistic(served) -> Tape:
    """session_realistic.jsonl: anchors at 1, 32, 45 and 70; 中文 at 87-91; fs_read at 20."""
    return Tape.objects.get(source="samples", name="session_realistic")


def positions(hits: list, tape: Tape) -> list[int]:
    """The entries of a tape that match: the hits and the copies folded under them."""
    return sorted(e.pos for h in hits if h.tape_key == tape.key for e in (h, *h.copies))


def test_chinese_is_found_in_session_realistic(realistic):
    hits = engine.search("中文")
    assert positions(hits, realistic) == [87, 88, 90, 91]
    hit = next(h for h in hits if h.tape_key == realistic.key and h.pos == 91)
    assert "<mark>中文</mark>" in hit.snippet_html
    assert (hit.tape_label, hit.source, hit.kind, hit.name) == (
        realistic.label,
        "samples",
        "message",
        "assistant",
    )
    assert hit.date == datetime(2026, 11, 22, 1, 37, 39, 12785, tzinfo=UTC)
    assert hit.url == f"/tapes/{realistic.key}/?at=91#e91"


@pytest.mark.parametrize(("word", "expected"), [("图", [91]), ("图片", [91]), ("可以", [87, 88, 90])])
def test_one_and_two_character_cjk_words_are_found(realistic, word, expected):
    assert positions(engine.search(word, tape_key=realistic.key), realistic) == expected


def test_cjk_characters_must_be_adjacent_to_match_a_word(realistic):
    assert positions(engine.search("文中", tape_key=realistic.key), realistic) == []


def test_code_identifiers_are_found_as_written(realistic):
    hits = engine.search("context_length_exceeded", tape_key=realistic.key)
    assert positions(hits, realistic) == [70, 71, 72]
    assert all("<mark>context_length_exceeded</mark>" in h.snippet_html for h in hits)
    assert positions(engine.search("fs_read", tape_key=realistic.key), realistic) == [20]


def test_an_identifier_is_not_found_by_its_parts_in_another_order(realistic):
    assert positions(engine.search("read_fs", tape_key=realistic.key), realistic) == []


def test_a_quoted_phrase_must_match_in_order(realistic):
    assert positions(engine.search('"naive CSV line parser"', tape_key=realistic.key), realistic) == [13, 94]
    assert positions(engine.search('"parser line CSV naive"', tape_key=realistic.key), realistic) == []


def test_every_word_must_match(realistic):
    assert positions(engine.search("README csvkit", tape_key=realistic.key), realistic) == [26, 94]
    assert positions(engine.search("README zebra", tape_key=realistic.key), realistic) == []


def test_a_word_ending_in_a_star_matches_its_beginning(realistic):
    assert 20 in positions(engine.search("fs_rea*", tape_key=realistic.key), realistic)


def test_kind_filter(realistic):
    hits = engine.search("README", tape_key=realistic.key, kinds=["tool_call", "tool_result"])
    assert positions(hits, realistic) == [8, 20, 36]
    assert {h.kind for h in hits} == {"tool_call", "tool_result"}


def test_role_filter_keeps_messages_of_that_role(realistic):
    assert positions(engine.search("README", tape_key=realistic.key, role="assistant"), realistic) == [13, 26]
    assert positions(engine.search("README", tape_key=realistic.key, role="user"), realistic) == [19]


def test_name_filter_matches_a_name_or_the_names_below_it(realistic):
    exact = engine.search("README", tape_key=realistic.key, name="loop.start")
    assert positions(exact, realistic) == [16]
    assert positions(engine.search("README", tape_key=realistic.key, name="loop"), realistic) == [16, 17]
    anchors = engine.search("pars*", tape_key=realistic.key, name="phase")
    assert {(h.kind, h.name) for h in anchors} == {
        ("anchor", "phase/explore-done"),
        ("anchor", "phase/implement"),
    }


def test_name_filter_takes_like_wildcards_literally(realistic):
    assert engine.search("README", tape_key=realistic.key, name="loop%") == []
    assert engine.search("README", tape_key=realistic.key, name="loop_start") == []


def test_date_filters(realistic):
    assert positions(
        engine.search("中文", since=date(2026, 11, 22), until=date(2026, 11, 22)), realistic
    ) == [87, 88, 90, 91]
    assert engine.search("中文", since=date(2026, 11, 23)) == []
    assert engine.search("中文", until=date(2026, 11, 21)) == []
    # A moment bounds to the moment (the API passes datetimes).
    before = datetime(2026, 11, 22, 1, 37, 39, 12780, tzinfo=UTC)
    assert positions(engine.search("中文", until=before), realistic) == [87, 88, 90]


def test_source_filter(served, realistic):
    everywhere = engine.search("中文")  # the same tape in both: one hit each entry, its twin beside it
    assert {t.source for h in everywhere for t in (h, *h.twins)} == {"home", "samples"}
    assert {h.source for h in engine.search("中文", source="home")} == {"home"}
    assert engine.search("中文", source="nowhere") == []


def test_tape_filter(realistic):
    hits = engine.search("中文", tape_key=realistic.key)
    assert {h.tape_key for h in hits} == {realistic.key}
    assert engine.search("中文", tape_key="no-such-tape") == []


def test_within_a_phase_keeps_the_entries_from_one_anchor_up_to_the_next(realistic):
    everywhere = positions(engine.search("README", tape_key=realistic.key), realistic)
    assert everywhere[0] < 32 and everywhere[-1] >= 32
    assert positions(engine.search("README", tape_key=realistic.key, within=(32, 45)), realistic) == [
        32,
        33,
        36,
    ]
    assert positions(engine.search("README", tape_key=realistic.key, within=(1, 32)), realistic) == [
        p for p in everywhere if p < 32
    ]
    assert engine.search("README", tape_key=realistic.key, within=(45, 32)) == []


def test_within_a_phase_needs_a_tape(served):
    with pytest.raises(ValueError):
        engine.search("README", within=(32, 45))


def test_relevance_and_time_order(realistic):
    best = engine.search("README", limit=500)
    newest = engine.search("README", order="time", limit=500)
    assert sorted((e.tape_key, e.pos) for h in best for e in (h, *h.copies)) == sorted(
        (e.tape_key, e.pos) for h in newest for e in (h, *h.copies)
    )
    assert [h.score for h in best] == sorted((h.score for h in best), reverse=True)
    assert [h.date for h in newest] == sorted((h.date for h in newest), reverse=True)
    assert len({h.score for h in best}) > 1


def test_results_come_in_pages(realistic):
    every = [(h.tape_key, h.pos) for h in engine.search("README", order="time")]
    first = [(h.tape_key, h.pos) for h in engine.search("README", order="time", limit=5)]
    second = [(h.tape_key, h.pos) for h in engine.search("README", order="time", limit=5, offset=5)]
    assert len(every) > 10 and first + second == every[:10]


@pytest.mark.parametrize(
    "q",
    [
        '"',
        "*",
        "NEAR(",
        ")",
        "'",
        '"unbalanced',
        "a OR",
        "NOT",
        "col:umn",
        "^x",
        "-",
        "%",
        "\\",
        "<->",
        "!:*",
        "'); --",
    ],
)
def test_a_hostile_query_never_fails(realistic, q):
    for order in engine.ORDERS:
        assert isinstance(engine.search(q, order=order), list)
    assert isinstance(engine.search_memory(q), list)


@pytest.mark.parametrize("q", ['"', "*", ")", "'", "-", "%"])
def test_a_query_of_only_punctuation_has_no_hits(served, q):
    assert engine.search(q) == []


def test_a_reset_tape_is_indexed_again_and_a_gone_tape_leaves_the_index(realistic, served):
    path = served["samples"] / "session_realistic.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:20]))  # shrunk: the indexer resets the tape
    discovery.sync()
    assert positions(engine.search("中文", tape_key=realistic.key), realistic) == []
    assert positions(engine.search("fs_read", tape_key=realistic.key), realistic) == [20]
    path.unlink()
    discovery.sync()
    assert not Tape.objects.filter(pk=realistic.pk).exists()
    assert all(
        h.source != "samples" or "session_realistic" not in h.tape_label for h in engine.search("fs_read")
    )
    assert engine.search("中文", source="samples") == [
        h for h in engine.search("中文", source="samples") if h.tape_key != realistic.key
    ]


def test_appended_entries_are_found(realistic, served):
    path = served["samples"] / "session_realistic.jsonl"
    line = '{"id": 98, "kind": "message", "payload": {"role": "user", "content": "新しい質問 zanzibar_quux"}, "meta": {}, "date": "2026-11-23T08:00:00+00:00"}\n'
    with path.open("a", encoding="utf-8") as f:
        f.write(line)
    discovery.sync()
    hits = engine.search("質問 zanzibar_quux")
    assert [(h.tape_key, h.pos) for h in hits] == [(realistic.key, 98)]


def test_indexing_entries_again_replaces_their_docs(realistic):
    SearchedTape.objects.filter(tape=realistic).update(offset=0, next_pos=1)  # as if the mark were lost
    feed.entries_indexed(None, tape=realistic)
    assert positions(engine.search("fs_read", tape_key=realistic.key), realistic) == [20]


# Memory


def memory_hits(q: str, **filters) -> list:
    return engine.search_memory(q, **filters)


def test_memory_search_finds_nanobot_long_term_memory(memory_sources):
    hits = memory_hits("Pixel")
    nanobot = [h for h in hits if h.kind == "nanobot.memory"]
    assert nanobot and nanobot[0].store_title == "MEMORY.md"
    assert "<mark>Pixel</mark>" in nanobot[0].snippet_html
    store = MemoryStore.objects.get(key=nanobot[0].store_key)
    assert nanobot[0].url == f"/memory/{store.key}/"


def test_memory_search_finds_yachiyo_entries_in_chinese_and_japanese(memory_sources):
    blue = memory_hits("蓝色", kind="yachiyo.memory")
    assert blue and all(h.kind == "yachiyo.memory" for h in blue)
    assert any("<mark>蓝色</mark>" in h.snippet_html for h in blue)
    assert all(h.item and h.date for h in blue)  # one doc per entry, dated by its updated_at
    japanese = memory_hits("日本語")
    assert any(h.kind == "yachiyo.memory" and "<mark>日本語</mark>" in h.snippet_html for h in japanese)


def test_memory_search_finds_yachiyo_keywords(memory_sources):
    hits = memory_hits("language zh", kind="yachiyo")
    assert hits and all(h.kind == "yachiyo.memory" for h in hits)


def test_memory_search_finds_kv_values_and_bub_zones(memory_sources):
    kv = memory_hits("日本語", kind="araliya")
    assert kv and kv[0].item == "working_memory" and "<mark>日本語</mark>" in kv[0].snippet_html
    zone = memory_hits("concise answers", kind="bub.zone")
    assert [h.item for h in zone] == ["long_term"]
    assert memory_hits("type hints", kind="bub.zone") == []  # only the zone the agent reads now


def test_memory_search_filters_by_store(memory_sources):
    store = MemoryStore.objects.get(kind="yachiyo.memory")
    hits = memory_hits("蓝色", store_key=store.key)
    assert hits and {h.store_key for h in hits} == {store.key}
    assert memory_hits("蓝色", store_key="no-such-store") == []


def test_memory_search_follows_the_files(memory_sources):
    path = next(memory_sources["nanobot"].rglob("MEMORY.md"))
    assert not memory_hits("Quokkabell")
    path.write_text(path.read_text() + "\n- Owns a ukulele named Quokkabell\n")
    assert [h.store_title for h in memory_hits("Quokkabell")] == ["MEMORY.md"]
    path.unlink()
    assert not memory_hits("Quokkabell")


def test_a_deleted_store_takes_its_docs_along(memory_sources, monkeypatch):
    store = MemoryStore.objects.get(kind="yachiyo.memory")
    assert memory_hits("蓝色", store_key=store.key)
    monkeypatch.setattr(engine, "refresh_memory_if_stale", lambda: None)  # no re-discovery of the file
    store.delete()
    assert not [h for h in memory_hits("蓝色") if h.kind == "yachiyo.memory"]


# The page


def test_search_page_shows_hits_with_marks_and_links(viewer_client, realistic):
    response = viewer_client.get(reverse("search:search"), {"q": "中文", "tape": realistic.key})
    assert response.status_code == 200
    page = response.content.decode()
    assert "<mark>中文</mark>" in page
    assert f'href="/tapes/{realistic.key}/?at=91#e91"' in page
    assert "<html" in page and 'id="results"' in page
    assert "phase/explore-done" in page  # the tape's anchors, to search within a phase


def test_search_page_escapes_agent_text(viewer_client, served):
    path = served["samples"] / "session_realistic.jsonl"
    line = '{"id": 98, "kind": "message", "payload": {"role": "user", "content": "<script>alert(1)</script> xyzzy"}, "meta": {}, "date": "2026-11-23T08:00:00+00:00"}\n'
    with path.open("a", encoding="utf-8") as f:
        f.write(line)
    discovery.sync()
    page = viewer_client.get(reverse("search:search"), {"q": "xyzzy"}).content.decode()
    assert "<mark>xyzzy</mark>" in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page


def test_htmx_gets_only_the_results(viewer_client, realistic):
    response = viewer_client.get(reverse("search:search"), {"q": "fs_read"}, headers={"HX-Request": "true"})
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="results">')
    assert "<html" not in page and "<form" not in page
    assert "<mark>fs_read</mark>" in page


def test_htmx_gets_the_filters_again_when_the_tape_changes(viewer_client, realistic):
    headers = {"HX-Request": "true", "HX-Target": "search"}
    response = viewer_client.get(
        reverse("search:search"), {"q": "README", "tape": realistic.key}, headers=headers
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="search">') and "<html" not in page
    assert 'name="from_anchor"' in page and 'id="results"' in page


def test_search_page_filters_and_within_phase(viewer_client, realistic):
    url = reverse("search:search")
    params = {"q": "README", "tape": realistic.key, "from_anchor": 32, "to_anchor": 45, "kind": ["tool_call"]}
    page = viewer_client.get(url, params).content.decode()
    assert "?at=36#e36" in page and "?at=20#e20" not in page and "?at=33#e33" not in page


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"from_anchor": 32}, "Choose a tape"),
        ({"tape": "TAPE", "from_anchor": 33}, "No anchor of this tape is at position 33"),
        ({"tape": "TAPE", "from_anchor": 45, "to_anchor": 32}, "must end after it starts"),
        ({"since": "2026-11-23", "until": "2026-11-22"}, "ends before it starts"),
        ({"since": "yesterday"}, "Enter a valid date"),
    ],
)
def test_search_page_explains_bad_filters(viewer_client, realistic, params, error):
    params = {k: realistic.key if v == "TAPE" else v for k, v in params.items()}
    response = viewer_client.get(reverse("search:search"), {"q": "README", **params})
    assert response.status_code == 200
    assert error in response.content.decode()


@pytest.mark.parametrize("q", ['"', "*", "NEAR(", ")", "'", '" OR *'])
def test_search_page_takes_a_hostile_query(viewer_client, served, q):
    for tab in ("tapes", "memory"):
        response = viewer_client.get(reverse("search:search"), {"q": q, "tab": tab})
        assert response.status_code == 200


def test_search_page_memory_tab(viewer_client, memory_sources):
    page = viewer_client.get(reverse("search:search"), {"q": "蓝色", "tab": "memory"}).content.decode()
    store = MemoryStore.objects.get(kind="yachiyo.memory")
    assert "<mark>蓝色</mark>" in page and f'href="/memory/{store.key}/"' in page


def test_search_page_pages_through_results_and_links_the_memory_tab(viewer_client, realistic, monkeypatch):
    from tapeview.search import views

    monkeypatch.setattr(views, "PAGE_SIZE", 5)
    first = viewer_client.get(reverse("search:search"), {"q": "README", "order": "time"}).content.decode()
    assert 'href="?q=README&amp;order=time&amp;page=2"' in first
    assert 'href="?q=README&amp;order=time&amp;tab=memory"' in first
    second = viewer_client.get(reverse("search:search"), {"q": "README", "order": "time", "page": 2})
    assert 'href="?q=README&amp;order=time&amp;page=1"' in second.content.decode()
    assert first.count('class="snippet"') == second.content.decode().count('class="snippet"') == 5


def test_search_page_requires_login(client, served):
    response = client.get(reverse("search:search"), {"q": "中文"})
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_nav_links_to_search(viewer_client, served):
    assert f'href="{reverse("search:search")}"' in viewer_client.get("/").content.decode()


def test_a_repeated_system_prompt_is_found_once_where_it_first_appears(tmp_path, settings) -> None:
    from tapeview.search import engine
    from tapeview.sources import parse_sources

    line = '{{"id": {i}, "kind": "system", "payload": {{"content": "You are Bub. Quokka rules apply."}}, "meta": {{}}}}\n'
    (tmp_path / "a__b.jsonl").write_text("".join(line.format(i=i) for i in range(1, 6)))
    discovery.sync(parse_sources([f"t=bub:{tmp_path}"]))
    hits = engine.search("quokka")
    assert [h.pos for h in hits] == [1]
