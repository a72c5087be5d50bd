"""The search pass behind the offset index: a big batch is made searchable later, resumably, and the
lag is shown until it is; ranking is bounded to the newest matches."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from tapeview.search import backends, catchup, engine
from tapeview.sources import parse_sources
from tapeview.tapes import discovery, watcher
from tapeview.tapes.models import Tape
from tests.search.conftest import N, hits_of
from tests.tapes.test_filecopy_behind import eventually

pytestmark = pytest.mark.django_db


def behind(reader) -> dict[str, int]:
    return {s["label"]: s["search_behind"] for s in reader.get("/api/sources").json()["items"]}


def test_a_big_batch_is_searchable_after_the_pass_and_api_sources_counts_down(big, reader):
    assert hits_of("w2000", big) == []
    assert behind(reader)["samples"] == N
    assert behind(reader)["home"] == 0
    assert catchup.catch_up(budget=0) == catchup.BATCH  # a budget spent: it stops after a batch
    assert behind(reader)["samples"] == N - catchup.BATCH
    assert catchup.catch_up() == N - catchup.BATCH
    assert behind(reader)["samples"] == 0
    assert hits_of("w2000", big) == [2000]


def test_the_statistics_are_renewed_after_as_many_docs_in_the_watchers_slices_as_in_one_pass(
    big, monkeypatch
):
    analyzed = []
    monkeypatch.setattr(backends.current().__class__, "analyze", lambda self: analyzed.append(True))
    monkeypatch.setattr(catchup, "ANALYZE_AFTER", 2 * catchup.BATCH)
    made = []
    for _ in range(3):  # the watcher's slices of the pass: a batch each, none of ANALYZE_AFTER docs
        made.append(catchup.catch_up(budget=0))
        made.append(len(analyzed))
    assert made == [catchup.BATCH, 0, catchup.BATCH, 1, N - 2 * catchup.BATCH, 1]


def test_a_pass_killed_mid_way_resumes_with_no_doubles_and_nothing_missing(big, monkeypatch):
    made = catchup.entry_rows
    calls = []

    def dies_in_the_second_batch(*args):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("killed")
        return made(*args)

    monkeypatch.setattr(catchup, "entry_rows", dies_in_the_second_batch)
    with pytest.raises(RuntimeError):
        catchup.catch_up()
    assert catchup.lag() == N - catchup.BATCH  # the first batch stays, with its progress
    monkeypatch.setattr(catchup, "entry_rows", made)
    assert catchup.catch_up() == N - catchup.BATCH
    assert catchup.lag() == 0
    assert engine.count("common", tape_key=big.key).total == N
    for n in (1, catchup.BATCH, catchup.BATCH + 1, 2 * catchup.BATCH + 1, N):
        assert hits_of(f"w{n}", big) == [n]


def test_a_reset_tape_is_made_searchable_again_from_its_start(big):
    catchup.catch_up()
    path = Path(big.path)
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:10]))  # shrunk: the tape is reset
    discovery.sync()
    catchup.catch_up()
    assert hits_of("w2000", big) == []
    assert engine.count("common", tape_key=big.key).total == 10


def test_a_common_word_is_ranked_among_the_newest_matches_and_still_paged(big, monkeypatch):
    catchup.catch_up()
    monkeypatch.setattr(backends, "CANDIDATES", 100)
    monkeypatch.setattr(engine, "WINDOW", 50)
    first = engine.search("common", tape_key=big.key, limit=10)
    assert len(first) == 10
    assert all(h.pos > N - 100 for h in first)  # ranked among the newest 100 matches only
    deep = engine.search("common", tape_key=big.key, limit=10, offset=300)
    assert len(deep) == 10 and all(h.pos <= N - 100 for h in deep)  # past them, a page still comes
    assert engine.count("common").total == N  # counting is not bounded by the candidates
    assert hits_of("w1", big) == [1]  # the oldest entry, found by a rare word
    assert [h.pos for h in engine.search("common w7", kinds=["message"], source="samples")] == [7]
    assert engine.search("common", kinds=["anchor"], tape_key=big.key) == []


def test_the_search_page_says_how_many_entries_are_not_yet_searchable(big, viewer_client):
    discovery.beat()  # a background indexer is alive: pages leave the pass to it
    page = viewer_client.get(reverse("search:search"), {"q": "common"}).content.decode()
    assert f"{N} entries not yet searchable" in page
    catchup.catch_up()
    page = viewer_client.get(reverse("search:search"), {"q": "common"}).content.decode()
    assert "not yet searchable" not in page
    assert "Ranked among the newest 2000 matching entries" in page


def test_without_a_background_indexer_a_search_catches_up_itself(big, reader):
    body = reader.get("/api/search", q="w2500").json()
    assert [(i["tape_id"], i["pos"]) for i in body["items"]] == [(big.key, 2500)]
    assert behind(reader)["samples"] == 0


def test_tapeview_index_leaves_every_entry_searchable(big, reader):
    with open(big.path, "a") as f:
        f.write(
            json.dumps({"id": N + 1, "kind": "message", "payload": {"content": "zebra"}, "meta": {}}) + "\n"
        )
    call_command("index", stdout=io.StringIO())
    assert behind(reader) == {"home": 0, "samples": 0}
    assert hits_of("zebra", big) == [N + 1]


@pytest.mark.django_db(transaction=True)
def test_the_watchers_slices_of_the_pass_follow_one_another_while_it_is_behind(tmp_path: Path, monkeypatch):
    """In `tapeview serve` the pass runs in slices between the watcher's looks at the files. While it is
    behind, the next slice starts at once, not after a quiet heartbeat: with a heartbeat of a minute
    here and a slice of one batch, twelve slices must not take twelve minutes."""
    monkeypatch.setattr(watcher, "BEAT", 60.0)
    monkeypatch.setattr(watcher, "FOLLOW_UP", 0.0)  # a slice: one batch
    monkeypatch.setattr(catchup, "BATCH", 100)
    folder = tmp_path / "bub"
    folder.mkdir()
    lines = [
        {"id": n, "kind": "message", "payload": {"role": "user", "content": f"w{n}"}} for n in range(1, 1201)
    ]
    date = ', "date": "2026-01-01T00:00:00.000001+00:00"}'
    (folder / "long.jsonl").write_text("".join(json.dumps(o)[:-1] + date + "\n" for o in lines))

    def caught_up() -> bool:
        return Tape.objects.filter(entries=1200).exists() and catchup.lag() == 0

    thread, stop = watcher.start_in_background(parse_sources([f"b=bub:{folder}"]), polling=True)
    try:
        eventually(caught_up, 60, "the pass caught up within a minute")
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
    assert [h.pos for h in engine.search("w1137")] == [1137]
