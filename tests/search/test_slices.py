"""On PostgreSQL the GIN index is also kept in slices of the doc ids, and a common word's newest
candidates are looked for slice by slice, newest first: the pages are those the whole index gives,
whatever the slices are (just made, the newest one split, a list read before a change, a change
that failed), and the plan reads a slice's index."""

from __future__ import annotations

from datetime import date

import psycopg
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tapeview.search import catchup, slices, windows
from tapeview.tapes import discovery, signals
from tests.search.test_dated_windows import ranked, spread, write_tape  # noqa: F401  (spread: a fixture)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's GIN index"),
]


@pytest.fixture(autouse=True)
def _forgotten():
    """Each test's slices are rolled back with its database: no other test may read them cached."""
    slices.forget()
    yield
    slices.forget()


SLICE = 400  # the docs of `spread`: 3,000 in 8 tapes, and the samples' 549


@pytest.fixture
def sliced(spread, monkeypatch):  # noqa: F811
    monkeypatch.setattr(slices, "SLICE", SLICE)
    slices.forget()
    made = slices.keep(whole=True)
    yield made
    slices.forget()  # the next test's database has none of these


def counted(s: slices.Slice) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM search_doc WHERE {s.sql()}")
        return cursor.fetchone()[0]


def docs(where: str = "id > 0") -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM search_doc WHERE {where}")
        return cursor.fetchone()[0]


PAGES = [("relevance", 0), ("time", 0), ("relevance", 20)]
QUERIES = [
    ("sparse", {}),
    ("common", {}),
    ('"common sparse"', {}),
    ("sparse", {"since": date(2026, 6, 1)}),
    ("common", {"until": date(2025, 12, 31)}),
    ("sparse", {"kinds": ["message"], "source": "samples"}),
]


def pages(q: str, filters: dict) -> tuple[list[list[tuple]], list[str]]:
    with CaptureQueriesContext(connection) as seen:
        found = [ranked(q, order, offset, **filters) for order, offset in PAGES]
    return found, [query["sql"] for query in seen.captured_queries if "ts_rank" in query["sql"]]


def unsliced(q: str, filters: dict, monkeypatch) -> list[list[tuple]]:
    """The same pages from the whole index alone, window by window as before there were slices."""
    with monkeypatch.context() as plain:
        plain.setattr(slices, "listed", lambda: [])
        found, sqls = pages(q, filters)
    assert sqls and not any("search_doc_slice" in sql or " AND id <= " in sql for sql in sqls)
    return found


def test_the_slices_hold_every_tape_doc_once_each_as_many_as_a_slice_or_up_to_two(sliced):
    made = slices.listed()
    assert sliced == len(made) >= 3
    assert made[0].high is None and all(s.high is not None for s in made[1:])  # the newest, open upwards
    assert [s.low for s in made] == sorted((s.low for s in made), reverse=True)
    for newer, older in zip(made, made[1:], strict=False):
        assert older.high == newer.low - 1  # no gap, no overlap
    assert made[-1].low == 1
    sizes = [counted(s) for s in made]
    assert sum(sizes) == docs() >= 3000  # the samples' docs besides
    assert all(SLICE <= n < 2 * SLICE for n in sizes)
    assert slices.keep(whole=True) == 0  # nothing more to make


@pytest.mark.parametrize("q, filters", QUERIES, ids=[f"{q} {list(f)}" for q, f in QUERIES])
def test_a_search_slice_by_slice_finds_ranks_and_cuts_what_the_whole_index_does(
    sliced, monkeypatch, q, filters
):
    monkeypatch.setattr(windows, "FEW", 0.5)  # every query here is "common" at this size
    found, sqls = pages(q, filters)
    top = slices.listed()[0]
    assert any(top.sql() in sql for sql in sqls)
    assert found == unsliced(q, filters, monkeypatch)
    assert all(found[:2])


def test_a_slice_is_read_by_its_own_index(sliced, monkeypatch):
    monkeypatch.setattr(windows, "FEW", 0.5)
    _, sqls = pages("sparse", {})
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sqls[0])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert f"Bitmap Index Scan on {slices.listed()[0].name}" in plan


def test_the_newest_slice_is_split_when_it_holds_two_slices_docs(sliced, served, monkeypatch):
    monkeypatch.setattr(windows, "FEW", 0.5)
    before = slices.listed()
    write_tape(served["samples"] / "newer.jsonl", 2026, 9, 2 * SLICE, newest=True)
    discovery.sync()
    catchup.catch_up()
    monkeypatch.setattr(slices, "_kept", 0.0)  # a pass with a budget looks now, not in a minute
    assert slices.keep(whole=False) == 1
    after = slices.listed()
    assert len(after) == len(before) + 1 and after[2:] == before[1:]
    assert after[1].low == before[0].low and after[0].low == after[1].high + 1
    assert sum(counted(s) for s in after) == docs() >= 3000 + 2 * SLICE
    for q, filters in QUERIES:
        assert pages(q, filters)[0] == unsliced(q, filters, monkeypatch)


def test_a_slice_an_old_tape_grew_is_split_in_slices_of_its_size(sliced, served, monkeypatch):
    monkeypatch.setattr(windows, "FEW", 0.5)
    before = slices.listed()
    held = [counted(s) for s in before]
    # The first tape, appended.
    write_tape(served["samples"] / "a.jsonl", 2026, 3, 300 + 3 * SLICE, newest=False)
    discovery.sync()
    catchup.catch_up()
    # Its docs' ids are the tape's own: they went into an older slice, not the newest.
    (n, old), *others = [(n, s) for n, s in enumerate(before) if counted(s) != held[n]]
    assert not others and old.high is not None and counted(old) == held[n] + 3 * SLICE
    assert slices.keep(whole=True) >= 1
    after = slices.listed()
    grown = [s for s in after if s not in before]
    assert after == before[:n] + grown + before[n + 1 :]  # the others as they were
    assert len(grown) >= 2 and grown[0].high == old.high and grown[-1].low == old.low
    for newer, older in zip(grown, grown[1:], strict=False):
        assert older.high == newer.low - 1
    assert all(SLICE <= counted(s) < 2 * SLICE for s in grown)
    assert sum(counted(s) for s in after) == docs()
    for q, filters in QUERIES:
        assert pages(q, filters)[0] == unsliced(q, filters, monkeypatch)


def test_an_upkeep_with_no_new_docs_counts_the_newest_slice_alone(sliced):
    with CaptureQueriesContext(connection) as seen:
        assert slices.keep(whole=True) == 0
    offsets = [q["sql"] for q in seen.captured_queries if "OFFSET" in q["sql"]]
    assert len(offsets) == 2, offsets  # whether the newest holds two slices' docs: no older one


def test_a_list_of_slices_read_before_a_split_still_finds_what_the_whole_index_does(
    sliced, served, monkeypatch
):
    monkeypatch.setattr(windows, "FEW", 0.5)
    stale = slices.listed()
    write_tape(served["samples"] / "newer.jsonl", 2026, 9, 2 * SLICE, newest=True)
    discovery.sync()
    catchup.catch_up()
    slices.forget()
    monkeypatch.setattr(slices, "_kept", 0.0)
    assert slices.keep(whole=False) == 1
    assert slices.listed()[0] != stale[0]
    for q, filters in QUERIES:
        with monkeypatch.context() as other:
            other.setattr(slices, "listed", lambda: stale)  # another process's list, read a minute ago
            found, sqls = pages(q, filters)
        assert any(stale[0].sql() in sql for sql in sqls)
        assert found == unsliced(q, filters, monkeypatch)


def test_a_change_that_fails_leaves_the_slices_as_they_were_and_search_right(spread, monkeypatch, caplog):  # noqa: F811
    monkeypatch.setattr(slices, "SLICE", SLICE)
    monkeypatch.setattr(windows, "FEW", 0.5)
    slices.forget()
    first = slices._next(slices.listed())[0]  # the statement that would make the first slice
    name = first.split()[2]
    with connection.cursor() as cursor:  # something else took its name
        cursor.execute(f"CREATE INDEX {name} ON search_doc (id)")
    try:
        assert slices.keep(whole=True) == 0
        assert "slices were left as they were" in caplog.text
        assert slices.listed() == []  # the name taken is no slice: not a GIN index over a range
        assert ranked("sparse")
    finally:
        slices.forget()


def test_a_second_process_at_the_slices_makes_this_one_wait_for_nothing(spread, monkeypatch):  # noqa: F811
    monkeypatch.setattr(slices, "SLICE", SLICE)
    slices.forget()
    params = connection.get_connection_params()
    other = psycopg.connect(**{k: v for k, v in params.items() if k in ("dbname", "host", "port", "user")})
    try:
        other.execute("SELECT pg_advisory_lock(%s)", [slices.LOCK])
        assert slices.keep(whole=True) == 0
        assert slices.listed() == []
        # Let go before closing: a closed connection's lock goes only when its backend has exited,
        # which a busy server may not have done yet (this test once found the lock still held).
        other.execute("SELECT pg_advisory_unlock(%s)", [slices.LOCK])
    finally:
        other.close()
        slices.forget()
    assert slices.keep(whole=True) >= 3


def test_no_slices_for_fewer_docs_than_two_slices_hold(spread, monkeypatch):  # noqa: F811
    monkeypatch.setattr(slices, "SLICE", 1800)
    slices.forget()
    assert slices.keep(whole=True) == 0
    assert slices.listed() == []
    assert len(ranked("sparse")) == 20


def test_the_idle_indexer_makes_a_slice_a_minute_and_tapeview_index_all_it_needs(spread, monkeypatch):  # noqa: F811
    monkeypatch.setattr(slices, "SLICE", SLICE)
    monkeypatch.setattr(slices, "_kept", 0.0)
    slices.forget()
    try:
        signals.indexer_idle.send(sender=discovery.SyncReport, budget=1.0)  # the watcher, idle
        assert len(slices.listed()) == 1
        signals.indexer_idle.send(sender=discovery.SyncReport, budget=1.0)  # not a minute later
        assert len(slices.listed()) == 1
        signals.indexer_idle.send(sender=discovery.SyncReport, budget=None)  # `tapeview index`
        assert len(slices.listed()) >= 3
    finally:
        slices.forget()


def test_a_change_that_waits_on_the_pass_gives_up_and_comes_again(spread, monkeypatch, caplog):  # noqa: F811
    monkeypatch.setattr(slices, "SLICE", SLICE)
    monkeypatch.setattr(slices, "LOCK_WAIT", "200ms")
    slices.forget()
    params = connection.get_connection_params()
    writing = psycopg.connect(**{k: v for k, v in params.items() if k in ("dbname", "host", "port", "user")})
    try:
        writing.execute("LOCK TABLE search_doc IN ROW EXCLUSIVE MODE")  # another host's pass, mid-batch
        assert slices.keep(whole=True) == 0
        assert "slices were left as they were" in caplog.text
        assert slices.listed() == []
        assert len(ranked("sparse")) == 20
    finally:
        writing.close()
        slices.forget()
    assert slices.keep(whole=True) >= 3
