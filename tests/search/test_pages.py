"""A page of hits past the folded window is cut from the candidates the window was ranked from: one
ranking query for the page, the same hits as before."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tapeview.search import backends, engine
from tests.search.test_ranking import entries, yachiyo  # noqa: F401  (yachiyo: a fixture)

pytestmark = pytest.mark.django_db


def ranking_queries(**kwargs: object) -> tuple[list, int]:
    with CaptureQueriesContext(connection) as seen:
        hits = engine.search("蓝色", **kwargs)
    return hits, sum("bm25(" in q["sql"] or "ts_rank(" in q["sql"] for q in seen.captured_queries)


@pytest.mark.parametrize("order", engine.ORDERS)
def test_a_page_past_the_window_is_ranked_by_one_query(yachiyo, monkeypatch, order):  # noqa: F811
    every = entries(engine.search("蓝色", order=order, limit=100))
    monkeypatch.setattr(engine, "WINDOW", 4)  # the 22 matches: 4 folded, the rest one by one
    seen = []
    for offset in range(0, 24, 3):
        hits, queries = ranking_queries(order=order, limit=3, offset=offset)
        assert queries == 1
        seen += entries(hits)
    assert len(seen) == len(set(seen)) == 22
    assert set(seen) == set(every)


def test_a_page_deeper_than_the_candidates_is_ranked_on_its_own(yachiyo, monkeypatch):  # noqa: F811
    monkeypatch.setattr(engine, "WINDOW", 4)
    monkeypatch.setattr(backends, "CANDIDATES", 8)
    hits, queries = ranking_queries(limit=3, offset=6)
    assert queries == 2  # the window's candidates, then the page's, as many as it reaches
    assert len(hits) == 3
