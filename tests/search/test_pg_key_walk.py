"""On PostgreSQL, a query the statistics say to walk the primary key down for is walked, whatever the
planner's estimate of a phrase says, and ranks what the planner's own plan ranks."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tapeview.search import backends, catchup, engine, windows
from tests.search.test_scale import big, ranked  # noqa: F401  (big: a fixture)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's plans and GIN index"),
]


def test_a_word_in_most_docs_is_walked_and_ranked_as_the_planner_ranks_it(big, monkeypatch):  # noqa: F811
    q = "common"
    catchup.catch_up()
    backends.PostgreSQL().analyze()
    monkeypatch.setattr(backends, "CANDIDATES", 60)
    monkeypatch.setattr(engine, "WINDOW", 20)
    with CaptureQueriesContext(connection) as seen:
        walked = ranked(q)
    assert any("ts_match_vq(" in query["sql"] for query in seen.captured_queries)
    monkeypatch.setattr(windows, "WALK", 1e9)  # never a walk: one range, the planner's plan
    monkeypatch.setattr(windows, "WINDOWS", 1)
    with CaptureQueriesContext(connection) as seen:
        assert ranked(q) == walked
    assert not any("ts_match_vq(" in query["sql"] for query in seen.captured_queries)
    assert len(walked) == 20
