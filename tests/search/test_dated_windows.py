"""On PostgreSQL a date-filtered search looks for its newest matches in the id ranges of the tapes in
range alone (windows of them, or a walk of them one after another): it finds, ranks and cuts exactly
what one plain query over every doc does, whichever tapes the dates keep."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tapeview.search import backends, catchup, engine, windows
from tapeview.tapes import discovery

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's windows and plans"),
]

# Written oldest id first: tapes in 2026 (from the month given on) between tapes of 2025, and a big one.
TAPES = [("a", 2026, 3, 300), ("b", 2025, 1, 300), ("c", 2026, 5, 300), ("d", 2025, 6, 200)]
TAPES += [("big", 2026, 4, 1200), ("e", 2025, 9, 300), ("f", 2026, 6, 300), ("g", 2025, 2, 100)]


def write_tape(path: Path, year: int, month: int, n: int, newest: bool) -> None:
    """Entry k says `common` and `w<k>`, `sparse` in every 10th (every 40th in the newest tapes, so the
    newest docs hold fewer of its matches than the table's share says); a month of dates per 100."""
    lines = []
    for k in range(1, n + 1):
        sparse = " sparse" if k % (40 if newest else 10) == 0 else ""
        at = month - 1 + (k - 1) // 100
        when = f"{year + at // 12}-{1 + at % 12:02d}-{1 + k % 28:02d}T10:00:00+00:00"
        entry = {
            "id": k,
            "kind": "message",
            "payload": {"role": "user", "content": f"entry w{k} common{sparse}"},
        }
        lines.append(json.dumps({**entry, "meta": {}, "date": when}))
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def spread(served, monkeypatch) -> None:
    monkeypatch.setattr(catchup, "BATCH", 1000)
    for n, (name, year, month, entries) in enumerate(TAPES):
        write_tape(served["samples"] / f"{name}.jsonl", year, month, entries, newest=n >= 4)
        discovery.sync()  # one at a time: ids in this order
    catchup.catch_up()
    backends.PostgreSQL().analyze()
    monkeypatch.setattr(backends, "CANDIDATES", 40)
    monkeypatch.setattr(engine, "WINDOW", 20)


def ranked(q: str, order: str = "relevance", offset: int = 0, **filters: object) -> list[tuple]:
    hits = engine.search(q, limit=20, order=order, offset=offset, **filters)
    return [(h.tape_label, h.pos, round(h.score, 6), h.snippet, [c.pos for c in h.copies]) for h in hits]


PAGES = [("relevance", 0), ("time", 0), ("relevance", 20)]


def searched(q: str, **filters: object) -> tuple[list[list[tuple]], list[str]]:
    """The pages a reader may ask for, and the SQL of the searches for them."""
    with CaptureQueriesContext(connection) as seen:
        pages = [ranked(q, order, offset, **filters) for order, offset in PAGES]
    return pages, [query["sql"] for query in seen.captured_queries if "ts_rank" in query["sql"]]


def plainly(q: str, monkeypatch, **filters: object) -> list[list[tuple]]:
    """The same pages from one query over every doc, as the planner plans it."""
    with monkeypatch.context() as plain:
        plain.setattr(windows, "FEW", 1e12)  # "few enough to read them all": one range, no tapes named
        pages, sqls = searched(q, **filters)
    assert sqls and not any(" OR id BETWEEN" in sql or "unnest(" in sql for sql in sqls)
    return pages


DATES = [
    {"since": date(2026, 6, 1)},
    {"since": date(2026, 4, 15), "until": date(2026, 7, 31)},
    {"until": date(2025, 12, 31)},
]


@pytest.mark.parametrize("dates", DATES, ids=["since", "between", "until"])
@pytest.mark.parametrize("q", ["sparse", '"common sparse"'])
def test_windows_of_the_tapes_in_range_rank_what_one_query_ranks(spread, monkeypatch, q, dates):
    monkeypatch.setattr(windows, "FEW", 0.5)
    monkeypatch.setattr(windows, "MARGIN", 1.0)  # the first window sized by the table's share alone
    pages, sqls = searched(q, **dates)
    assert any(" OR id BETWEEN" in sql for sql in sqls)  # the tapes' ranges, not all ids
    with CaptureQueriesContext(connection) as seen:
        engine.search(q, limit=20, **dates)
    assert sum("ts_rank" in query["sql"] for query in seen.captured_queries) >= 2  # the first held too few
    assert pages == plainly(q, monkeypatch, **dates)
    assert all(pages)


@pytest.mark.parametrize("most", [1, 2, windows.RANGES])
def test_ranges_bridged_over_the_tapes_out_of_range_find_the_same(spread, monkeypatch, most):
    monkeypatch.setattr(windows, "FEW", 0.5)
    monkeypatch.setattr(windows, "MARGIN", 1.0)
    monkeypatch.setattr(windows, "RANGES", most)
    dates = {"since": date(2026, 3, 1)}
    pages, _ = searched("sparse", **dates)
    assert pages == plainly("sparse", monkeypatch, **dates)


@pytest.mark.parametrize("dates", DATES, ids=["since", "between", "until"])
def test_a_word_in_most_docs_walks_the_tapes_in_range_one_after_another(spread, monkeypatch, dates):
    pages, sqls = searched("common", **dates)
    assert all("unnest(" in sql and "ts_match_vq(" in sql for sql in sqls)
    assert pages == plainly("common", monkeypatch, **dates)
    assert [len(page) for page in pages] == [20, 20, 20]


def test_a_date_filter_no_tape_is_in_finds_nothing(spread):
    assert ranked("common", since=date(2028, 1, 1)) == []
    assert ranked("sparse", until=date(2020, 1, 1)) == []


def test_windows_leave_the_transaction_its_own_parallel_workers(spread, monkeypatch):
    monkeypatch.setattr(windows, "FEW", 0.5)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 3")
        assert ranked("sparse", since=date(2026, 6, 1))
        cursor.execute("SHOW max_parallel_workers_per_gather")
        assert cursor.fetchone()[0] == "3"
