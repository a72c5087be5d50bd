"""On PostgreSQL the search pass's big batches are searchable before the GIN index holds them (fresh
docs, search/fresh.py): a search finds, ranks, cuts and marks exactly what it does once they are
moved into the index, whether none, some or all of them have been moved."""

from __future__ import annotations

import json
from datetime import date

import pytest
from django.db import connection

from tapeview.search import backends, catchup, engine, fresh
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape
from tests.search.test_dated_windows import TAPES, ranked, write_tape

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's fresh docs"),
]

QUERIES = [
    ("sparse", {}),
    ("common", {}),
    ("w150", {}),
    ('"entry w15"', {}),
    ("w15*", {}),
    ("common sparse", {"since": date(2026, 3, 1)}),
    ("sparse", {"until": date(2025, 12, 31)}),
    ("entry", {"kinds": ["message"], "source": "samples"}),
    ("w1*", {"role": "user"}),
    ("nothing-here", {}),
]
PAGES = [("relevance", 0), ("time", 0), ("relevance", 20), ("time", 40)]


def count(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table} WHERE id > 0")
        return cursor.fetchone()[0]


def pages() -> dict:
    return {(q, str(f), o, off): ranked(q, o, off, **f) for q, f in QUERIES for o, off in PAGES}


def made_fresh(served, monkeypatch) -> int:
    """The eight tapes of test_dated_windows, each made searchable as fresh docs; returns their docs."""
    monkeypatch.setattr(catchup, "BATCH", 1000)
    monkeypatch.setattr(fresh, "FRESH_DOCS", 100)
    for n, (name, year, month, entries) in enumerate(TAPES):
        write_tape(served["samples"] / f"{name}.jsonl", year, month, entries, newest=n >= 4)
        discovery.sync()
    catchup.catch_up()
    return sum(entries for *_, entries in TAPES)


@pytest.fixture
def fresh_tapes(served, monkeypatch) -> int:
    """made_fresh's tapes, searched with small windows (their deeper pages ranked on their own)."""
    made = made_fresh(served, monkeypatch)
    monkeypatch.setattr(backends, "CANDIDATES", 40)
    monkeypatch.setattr(engine, "WINDOW", 20)
    return made


def test_fresh_docs_are_found_as_the_index_finds_them_before_during_and_after_the_move(fresh_tapes):
    assert count("search_fresh") >= fresh_tapes and count("search_doc") < 600  # the samples' small tapes
    before = pages()
    assert before[("sparse", "{}", "relevance", 0)] and before[('"entry w15"', "{}", "time", 0)]
    assert not before[("nothing-here", "{}", "relevance", 0)]
    fresh.refine(blocks=3)
    assert 0 < count("search_fresh") < fresh_tapes
    assert pages() == before
    fresh.refine()
    assert count("search_fresh") == 0 and not fresh.pending()
    assert pages() == before


def test_a_phrase_or_two_words_in_one_block_but_not_one_doc_are_not_found(served, monkeypatch):
    monkeypatch.setattr(fresh, "FRESH_DOCS", 10)
    texts = ["alpha one", "beta two", "beta alpha", "gamma alpha beta"] * 10
    lines = [
        json.dumps({"id": n, "kind": "message", "payload": {"role": "user", "content": text}, "meta": {}})
        for n, text in enumerate(texts, 1)
    ]
    (served["samples"] / "phrases.jsonl").write_text("\n".join(lines) + "\n")
    discovery.sync()
    catchup.catch_up()
    assert count("search_fresh") == len(texts)
    tape = Tape.objects.get(name="phrases")
    hits = {q: found(q, tape) for q in QUERIES_2}
    assert hits['"alpha beta"'] == list(range(4, 41, 4))
    assert hits["one two"] == []
    assert hits["alpha two"] == []
    assert hits["gamma one"] == []
    assert hits["beta"] == [p for p in range(1, 41) if p % 4 != 1]
    fresh.refine()
    assert {q: found(q, tape) for q in QUERIES_2} == hits


def found(q: str, tape: Tape) -> list[int]:
    """The positions of the entries found, the repeats folded under a hit with it."""
    return sorted(
        p for h in engine.search(q, tape_key=tape.key, limit=100) for p in [h.pos, *(c.pos for c in h.copies)]
    )


QUERIES_2 = ['"alpha beta"', "one two", "alpha two", "gamma one", "beta"]


def test_the_count_of_matches_is_the_same_fresh_or_moved(fresh_tapes):
    counted = {q: engine.count(q, **f).total for q, f in QUERIES}
    assert counted["common"] == fresh_tapes and counted["nothing-here"] == 0
    fresh.refine()
    assert {q: engine.count(q, **f).total for q, f in QUERIES} == counted


def test_a_tape_reset_forgets_its_fresh_docs_and_their_blocks(fresh_tapes):
    big = Tape.objects.get(name="big")
    assert engine.search("w1100", tape_key=big.key)
    catchup.forget_tape(big.pk)
    assert not engine.search("w1100", tape_key=big.key)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_fresh WHERE id >> 32 = %s", [big.pk])
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM search_chunk WHERE low >> 32 = %s", [big.pk])
        assert cursor.fetchone()[0] == 0
    assert engine.search("w100")  # the other tapes' entries of that position
    fresh.refine()
    assert not fresh.pending() and not engine.search("w1100", tape_key=big.key)


def test_a_doc_made_again_directly_leaves_no_fresh_copy(fresh_tapes, monkeypatch):
    a = Tape.objects.get(name="a")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_fresh WHERE id >> 32 = %s", [a.pk])
        assert cursor.fetchone()[0] == 300
    # The tape's progress forgotten but not its docs (as migration search 0005 does): made again whole.
    catchup.SearchedTape.objects.filter(tape_id=a.pk).update(offset=0, next_pos=1)
    monkeypatch.setattr(fresh, "FRESH_DOCS", 10**6)
    catchup.catch_up()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_fresh WHERE id >> 32 = %s", [a.pk])
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM search_doc WHERE id >> 32 = %s", [a.pk])
        assert cursor.fetchone()[0] == 300
    assert [h.pos for h in engine.search('"entry w150"', tape_key=a.key)] == [150]


def test_the_search_page_says_how_many_entries_wait_for_the_full_text_index(
    fresh_tapes, operator_client, settings
):
    settings.TAPEVIEW_WEB_INDEXES = False  # as `serve --no-index`: the page moves none itself
    page = operator_client.get("/search/", {"q": "w1150"}).content.decode()
    waiting = count("search_fresh")
    assert f"{waiting} entries are searchable but not yet in the full-text index" in page
    assert "entry <mark>w1150</mark> common" in page
    fresh.refine()
    page = operator_client.get("/search/", {"q": "w1150"}).content.decode()
    assert "not yet in the full-text index" not in page and "entry <mark>w1150</mark> common" in page


def test_where_no_indexer_runs_the_search_page_moves_fresh_docs_within_its_budget(
    fresh_tapes, operator_client
):
    assert fresh.pending()
    assert operator_client.get("/search/", {"q": "sparse"}).status_code == 200
    assert not fresh.pending()  # 2,600 docs: well within the page's two seconds


def test_a_memory_store_goes_straight_into_the_index_however_many_its_docs(memory_sources, monkeypatch):
    """A store is written again whole at each change, by whichever process saw it: never fresh."""
    from memory_admin import versions
    from memory_admin.models import MemoryStore
    from tapeview.search import feed

    monkeypatch.setattr(fresh, "FRESH_DOCS", 1)
    for store in MemoryStore.objects.all():
        feed.index_store(store, versions.snapshot(store))
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_fresh WHERE id < 0")
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT count(*) FROM search_doc WHERE id < 0")
        assert cursor.fetchone()[0] > 10
    assert not fresh.pending()
    assert any("<mark>Pixel</mark>" in h.snippet_html for h in engine.search_memory("Pixel"))


def test_a_tape_made_again_directly_leaves_no_block_behind(fresh_tapes, monkeypatch):
    a = Tape.objects.get(name="a")
    catchup.SearchedTape.objects.filter(tape_id=a.pk).update(offset=0, next_pos=1)
    monkeypatch.setattr(fresh, "FRESH_DOCS", 10**6)
    waiting = fresh.waiting()
    catchup.catch_up()
    assert fresh.waiting() == waiting - 300  # its block went with its fresh docs
