"""PostgreSQL's fresh docs (search/fresh.py) while another process moves them into the GIN index: a
search and a count see each doc once, a tape reset meanwhile neither deadlocks nor leaves a doc
behind, and a block of docs too varied for one tsvector is made in several chunk rows."""

from __future__ import annotations

import json
import random
import threading
import time

import pytest
from django.db import connection, connections, transaction

from tapeview.search import catchup, engine, fresh, fresh_search
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape
from tests.search.test_fresh import made_fresh

pytestmark = [
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's fresh docs"),
]


def elsewhere(work):
    """`work` on a connection of its own (as another process would), and what it returned or raised."""
    out: dict = {}

    def run() -> None:
        try:
            out["result"] = work()
        except Exception as exc:  # reported to the test
            out["error"] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


@pytest.fixture
def fresh_tapes(served, monkeypatch) -> None:
    made_fresh(served, monkeypatch)


@pytest.mark.django_db(transaction=True)
def test_a_search_and_a_count_while_another_process_moves_a_block_see_each_doc_once(fresh_tapes, monkeypatch):
    expected = [(h.tape_label, h.pos) for h in engine.search("sparse", limit=200, order="time")]
    counted = engine.count("sparse").total
    assert len(expected) == 156 and counted == 156

    def moving(real):
        def read(*args, **kwargs):  # a block moved between the reads of the two tables
            thread, out = elsewhere(lambda: fresh.refine(blocks=1))
            thread.join()
            assert out["result"] > 0
            return real(*args, **kwargs)

        return read

    monkeypatch.setattr(fresh_search, "found", moving(fresh_search.found))
    monkeypatch.setattr(fresh_search, "counted", moving(fresh_search.counted))
    assert [(h.tape_label, h.pos) for h in engine.search("sparse", limit=200, order="time")] == expected
    assert engine.count("sparse").total == counted


@pytest.mark.django_db(transaction=True)
def test_a_tape_reset_while_another_process_moves_its_block_neither_deadlocks_nor_leaves_a_doc(
    fresh_tapes, monkeypatch
):
    first = Tape.objects.get(name="a")  # the lowest fresh ids: its block is the one `refine` takes first
    locked, deleting = threading.Event(), threading.Event()
    real_fetch = fresh.fetch

    def fetch(sql, params):  # the mover holds its block a moment, until the reset is under way
        rows = real_fetch(sql, params)
        if "FOR UPDATE SKIP LOCKED" in sql:
            locked.set()
            deleting.wait(2)
        return rows

    monkeypatch.setattr(fresh, "fetch", fetch)
    mover, moved = elsewhere(lambda: fresh.refine(blocks=1))
    assert locked.wait(5)

    def slowly(execute, sql, params, many, context):
        if sql.startswith("DELETE FROM search_fresh WHERE id BETWEEN"):
            deleting.set()
        result = execute(sql, params, many, context)
        time.sleep(0.2)
        return result

    with connection.execute_wrapper(slowly), transaction.atomic():  # as tapes.index resets a tape
        catchup.forget_tape(first.pk)
    mover.join()
    assert "error" not in moved
    assert not engine.search("common", tape_key=first.key)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM search_doc WHERE id >> 32 = %s", [first.pk])
        assert cursor.fetchone()[0] == 0


@pytest.mark.django_db
def test_a_block_too_varied_for_one_tsvector_is_made_in_several_chunk_rows(served, monkeypatch):
    monkeypatch.setattr(fresh, "FRESH_DOCS", 100)
    chance = random.Random(7)
    hashes = [[f"{chance.getrandbits(48):012x}" for _ in range(40)] for _ in range(2500)]
    lines = [
        json.dumps({"id": n, "kind": "message", "payload": {"role": "tool", "content": " ".join(words)}})
        for n, words in enumerate(hashes, 1)
    ]
    (served["samples"] / "hashes.jsonl").write_text("\n".join(lines) + "\n")
    discovery.sync()
    assert catchup.catch_up() >= 2500  # PostgreSQL refused one tsvector of the block's 100,000 words
    tape = Tape.objects.get(name="hashes")
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), sum(docs) FROM search_chunk WHERE low >> 32 = %s", [tape.pk])
        rows, docs = cursor.fetchone()
    assert rows > 1 and docs == 2500
    for n in (1, 1234, 2500):
        assert [h.pos for h in engine.search(hashes[n - 1][17], tape_key=tape.key)] == [n]
    fresh.refine()
    assert [h.pos for h in engine.search(hashes[1233][17], tape_key=tape.key)] == [1234]
