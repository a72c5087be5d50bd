"""Search at scale on PostgreSQL: candidates found window by window from the newest docs down find
what the plain plan finds, ranked and cut the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tapeview.search import backends, catchup, engine, windows
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's plans and GIN index"),
]

N = 3000


def write_tape(folder: Path, name: str, n: int) -> None:
    """Entry k says `common` and `w<k>`; `sparse` in every 10th of the older half and every 40th of
    the newer, so the newest docs hold fewer of its matches than the table's share says."""
    lines = []
    for k in range(1, n + 1):
        sparse = " sparse" if k % (10 if k <= n // 2 else 40) == 0 else ""
        text = f"entry w{k} common{sparse} and sparse words" if k % 300 == 0 else f"entry w{k} common{sparse}"
        lines.append(
            json.dumps(
                {
                    "id": k,
                    "kind": "message",
                    "payload": {"role": "user", "content": text},
                    "meta": {},
                    "date": f"2026-{1 + k * 12 // (n + 1):02d}-{1 + k % 28:02d}T10:00:00+00:00",
                }
            )
        )
    (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture
def big(served, monkeypatch) -> Tape:
    monkeypatch.setattr(catchup, "BATCH", 1000)
    write_tape(served["samples"], "big", N)
    discovery.sync()
    return Tape.objects.get(source="samples", name="big")


def ranked(q: str, **filters: object) -> list[tuple[int, float, str]]:
    return [(h.pos, round(h.score, 6), h.snippet) for h in engine.search(q, limit=20, **filters)]


def windows_taken(q: str, **filters: object) -> int:
    with CaptureQueriesContext(connection) as seen:
        engine.search(q, limit=20, **filters)
    return sum("ts_rank" in query["sql"] for query in seen.captured_queries)


@pytest.mark.parametrize(
    "q, filters",
    [
        ("sparse", {}),
        ("sparse", {"since": "2026-06-01"}),
        ('"common sparse"', {}),
        ("sparse", {"kinds": ["message"], "source": "samples"}),
    ],
)
def test_windows_of_the_newest_docs_rank_what_one_range_ranks(big, monkeypatch, q, filters):
    from datetime import date

    if "since" in filters:
        filters = {"since": date.fromisoformat(filters["since"])}
    catchup.catch_up()
    backends.PostgreSQL().analyze()
    monkeypatch.setattr(backends, "CANDIDATES", 40)
    monkeypatch.setattr(engine, "WINDOW", 20)
    monkeypatch.setattr(windows, "FEW", 0.5)
    monkeypatch.setattr(windows, "MARGIN", 1.0)  # the first window sized by the table's share alone
    windowed = ranked(q, **filters)
    assert windows_taken(q, **filters) >= 2  # the first window held too few of the newest matches
    monkeypatch.setattr(windows, "WINDOWS", 1)  # one range: the planner's own plan
    assert windows_taken(q, **filters) == 1
    assert windowed == ranked(q, **filters)
    assert windowed and all(h_pos > 0 for h_pos, _, _ in windowed)


def test_a_word_in_most_docs_and_a_rare_one_are_one_range(big, monkeypatch):
    catchup.catch_up()
    backends.PostgreSQL().analyze()
    monkeypatch.setattr(backends, "CANDIDATES", 60)
    assert windows_taken("common") == 1
    assert windows_taken("w17") == 1
    assert [h.pos for h in engine.search("w17")] == [17]
