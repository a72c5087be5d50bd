"""Search totals a person can check: capped by default, exact when asked for within a time budget,
"at least" past it, and a note saying what is counted."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection

from tapeview.search import backends, catchup, engine
from tapeview.search.filters import tape_where
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

NOTE = "repeated system prompts counted once"


@pytest.fixture
def capped(monkeypatch) -> int:
    """A count limit below the `big` tape's matches of `common`."""
    monkeypatch.setattr(engine, "COUNT_LIMIT", 100)
    return 100


def lines_saying(tape: Tape, word: str) -> int:
    """What a person counts in the tape's file: the entries whose text holds the word."""
    with open(tape.path, encoding="utf-8") as f:
        return sum(word in json.loads(line)["payload"]["content"].split() for line in f if line.strip())


def test_an_exact_count_is_every_entry_a_person_would_count(reader, big, capped) -> None:
    expected = lines_saying(big, "common")
    assert expected > capped
    body = reader.get("/api/search", q="common", tape=big.key, count="exact").json()
    assert (body["total"], body["total_capped"], body["total_exact"]) == (expected, False, True)


def test_without_asking_the_total_stops_at_the_limit(reader, big, capped) -> None:
    body = reader.get("/api/search", q="common", tape=big.key).json()
    assert (body["total"], body["total_capped"], body["total_exact"]) == (capped, True, False)


def test_an_exact_count_of_few_matches_is_exact_either_way(reader, big, capped) -> None:
    for count in ("capped", "exact"):
        body = reader.get("/api/search", q="w7", tape=big.key, count=count).json()
        assert (body["total"], body["total_capped"], body["total_exact"]) == (1, False, True)


def test_an_exact_count_out_of_time_is_at_least_the_capped_count(reader, big, capped, settings) -> None:
    settings.TAPEVIEW_SEARCH_COUNT_SECONDS = 0
    answer = reader.get("/api/search", q="common", tape=big.key, count="exact")
    assert answer.status_code == 200
    body = answer.json()
    assert (body["total"], body["total_capped"], body["total_exact"]) == (capped, True, False)


@pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite's progress handler interrupts a count")
def test_a_count_interrupted_by_its_deadline_says_at_least(big, capped, settings) -> None:
    catchup.catch_up()
    settings.TAPEVIEW_SEARCH_COUNT_SECONDS = 1e-9  # past before the count's first thousand instructions
    counted = engine.count("common", exact=True, tape_key=big.key)
    assert (str(counted), counted.timed_out) == (f"at least {capped}", True)
    # The connection is left as it was: the next count is whole.
    settings.TAPEVIEW_SEARCH_COUNT_SECONDS = 30
    assert str(engine.count("common", exact=True, tape_key=big.key)) == str(lines_saying(big, "common"))
    assert connection.connection.execute("SELECT 1").fetchone() == (1,)


def test_the_api_says_what_its_total_counts(reader, big) -> None:
    body = reader.get("/api/search", q="common").json()
    assert set(body) == {"items", "next_cursor", "total", "total_capped", "total_exact", "total_note"}
    assert NOTE in body["total_note"]


def test_a_count_that_is_neither_capped_nor_exact_is_422(reader, big) -> None:
    answer = reader.get("/api/search", q="common", count="all")
    assert answer.status_code == 422 and isinstance(answer.json()["detail"], list)


def _hit_count(page: str) -> str:
    found = re.search(r'<p class="sub" id="hit-count">(.*?)</p>', page, re.S)
    assert found, page
    return re.sub(r"<[^>]+>", "", found.group(1))


def test_the_page_offers_an_exact_count_and_notes_what_it_counts(viewer_client, big, capped) -> None:
    page = viewer_client.get("/search/", {"q": "common", "tape": big.key}).content.decode()
    assert _hit_count(page).startswith(f"{capped}+ matching entries · count them all;")
    assert "count=exact" in page
    assert NOTE in page


def test_the_page_counts_them_all_when_asked(viewer_client, big, capped) -> None:
    page = viewer_client.get("/search/", {"q": "common", "tape": big.key, "count": "exact"}).content.decode()
    assert _hit_count(page).startswith(f"{lines_saying(big, 'common')} matching entries;")
    assert "count them all" not in page


def test_the_page_says_at_least_when_counting_takes_too_long(viewer_client, big, capped, settings) -> None:
    settings.TAPEVIEW_SEARCH_COUNT_SECONDS = 0
    answer = viewer_client.get("/search/", {"q": "common", "tape": big.key, "count": "exact"})
    assert answer.status_code == 200
    assert _hit_count(answer.content.decode()).startswith(
        f"at least {capped} matching entries (counting them all takes longer than 0 s);"
    )


def test_a_bad_count_on_the_page_is_said_not_a_500(viewer_client, big) -> None:
    answer = viewer_client.get("/search/", {"q": "common", "count": "all"})
    assert answer.status_code == 200
    assert "Select a valid choice" in answer.content.decode()


def test_each_session_counts_its_own_matching_entries(viewer_client, served, big, capped) -> None:
    lines = [
        json.dumps(
            {
                "id": n,
                "kind": "message",
                "payload": {"role": "user", "content": f"small {'common' if n % 2 else 'rare'} {n}"},
                "meta": {},
                "date": f"2026-02-0{n}T10:00:00+00:00",
            }
        )
        for n in range(1, 8)
    ]
    (served["samples"] / "small.jsonl").write_text("\n".join(lines) + "\n")
    discovery.sync()
    small = Tape.objects.get(source="samples", name="small")
    page = viewer_client.get("/search/", {"q": "common"}).content.decode()
    counts = dict(re.findall(r'href="/tapes/(\w+)/">.*?<span class="count">([^<]*)</span>', page, re.S))
    assert counts[small.key] == f"{lines_saying(small, 'common')} matching entries"
    assert counts[big.key] == f"{capped}+ matching entries"


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's statement_timeout")
def test_a_count_held_up_past_its_deadline_is_cancelled(big, capped) -> None:
    import psycopg

    catchup.catch_up()
    # Another session holds the table: the exact count waits, and its statement_timeout cancels it.
    params = connection.get_connection_params()
    with psycopg.connect(**params, autocommit=False) as other:
        # Were the count not cancelled, the lock goes with this session after 5 s and the count ends.
        other.execute("SET idle_in_transaction_session_timeout = '5s'")
        other.execute("LOCK TABLE search_doc IN ACCESS EXCLUSIVE MODE")
        assert backends.current().count_within("common", tape_where(tape_key=big.key), 0.2) is None
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"  # the session's own setting back
    counted = engine.count("common", exact=True, tape_key=big.key)
    assert (str(counted), counted.timed_out) == (str(lines_saying(big, "common")), False)
