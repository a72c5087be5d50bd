"""Search that ranks as a person would, on the real yachiyo and Bub samples: copies folded under the
entry they repeat, pages of those hits, counts per session and in all (on either engine)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from tapeview.search import engine
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent.parent / "fixtures"
COPIES = {"llm.stream.delta", "tool_call.delta", "tool_call.stable", "llm.final", "llm.prompt.assembled"}


@pytest.fixture
def yachiyo(settings, tmp_path: Path) -> Tape:
    """The real yachiyo session store, indexed; the session in which the user's favourite colour is 蓝色."""
    shutil.copytree(FIXTURES / "yachiyo", tmp_path / "yachiyo")
    settings.TAPEVIEW_SOURCES = f"ya=yachiyo:{tmp_path / 'yachiyo' / 'data'}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return Tape.objects.get(source="ya", name="sess-zh-prefs-0001")


@pytest.fixture
def realistic(served) -> Tape:
    return Tape.objects.get(source="samples", name="session_realistic")


def entries(hits: list) -> list[tuple[str, int]]:
    """Every matching entry: the hits and the copies folded under them."""
    return [(e.tape_key, e.pos) for h in hits for e in (h, *h.copies)]


def folded(hits: list, tape: Tape) -> dict[tuple[int, str, str], list[tuple[int, str]]]:
    return {
        (h.pos, h.kind, h.name): [(c.pos, c.name) for c in h.copies] for h in hits if h.tape_key == tape.key
    }


def test_blue_on_yachiyo_finds_the_messages_and_the_tool_call_with_their_copies_folded(yachiyo):
    hits = engine.search("蓝色")
    assert hits[0].kind in ("message", "tool_call", "tool_result")
    # A copy is a hit of its own only where it repeats no other hit (a prompt that quotes memory).
    assert {h.name for h in hits if h.name in COPIES} == {"llm.prompt.assembled"}
    assert [h.tape_key for h in hits if h.name in COPIES] == [Tape.objects.get(name="sess-project-facts").key]
    assert folded(hits, yachiyo) == {
        (1, "message", "user"): [
            (2, "run 1: 记住：我最喜欢的颜色是蓝色，我每天早上七点起床。"),
            (3, "plan"),
            (4, "llm.prompt.assembled"),
            (26, "llm.prompt.assembled"),
            (51, "llm.prompt.assembled"),
        ],
        (22, "message", "assistant"): [(18, "llm.stream.delta"), (20, "llm.final"), (21, "done")],
        (8, "tool_call", "memory_write, memory_write"): [
            (6, "tool_call.delta"),
            (7, "tool_call.stable"),
            (14, "llm.final"),
        ],
        (16, "tool_result", "memory_write, memory_write"): [],
    }
    count = engine.count("蓝色")
    assert (count.total, count.capped) == (22, False) == (len(entries(hits)), False)
    assert len(hits) == 6 and len(set(entries(hits))) == 22


def test_a_prompt_that_repeats_no_hit_stays_a_hit(yachiyo):
    facts = Tape.objects.get(source="ya", name="sess-project-facts")
    hits = [h for h in engine.search("蓝色") if h.tape_key == facts.key]
    assert [(h.kind, h.name, h.copies) for h in hits] == [("event", "llm.prompt.assembled", ())]


def test_hits_keep_the_order_of_their_own_score_or_time(yachiyo):
    best = engine.search("蓝色")
    newest = engine.search("蓝色", order="time")
    assert [h.score for h in best] == sorted((h.score for h in best), reverse=True)
    assert [h.date for h in newest] == sorted((h.date for h in newest), reverse=True)
    assert sorted(entries(best)) == sorted(entries(newest))


@pytest.mark.parametrize("order", engine.ORDERS)
def test_a_page_is_a_page_of_hits_with_their_copies(yachiyo, order):
    every = engine.search("蓝色", order=order)
    pages = [engine.search("蓝色", order=order, limit=4, offset=n) for n in (0, 4, 8)]
    assert [len(p) for p in pages] == [4, 2, 0]
    assert [(h.tape_key, h.pos, h.copies) for p in pages for h in p] == [
        (h.tape_key, h.pos, h.copies) for h in every
    ]


@pytest.mark.parametrize("window", [1, 4, 9])
def test_past_the_window_hits_come_one_by_one_and_none_is_lost_or_repeated(yachiyo, monkeypatch, window):
    monkeypatch.setattr(engine, "WINDOW", window)
    seen = []
    for offset in range(0, 30, 3):
        seen += entries(engine.search("蓝色", limit=3, offset=offset))
    assert len(seen) == len(set(seen)) == 22


def test_the_count_stops_at_its_limit(yachiyo, monkeypatch):
    monkeypatch.setattr(engine, "COUNT_LIMIT", 5)
    count = engine.count("蓝色", tapes=[yachiyo.key])
    assert (count.total, count.capped, str(count)) == (5, True, "5+")
    assert (count.by_tape[yachiyo.key].total, count.by_tape[yachiyo.key].capped) == (5, True)


def test_counts_per_tape_follow_the_filters(yachiyo):
    demo = Tape.objects.get(source="ya", name="sess-markdown-demo")
    count = engine.count("蓝色", tapes=[yachiyo.key, demo.key, "no-such-tape"])
    assert {k: c.total for k, c in count.by_tape.items()} == {yachiyo.key: 15, demo.key: 6}
    messages = engine.count("蓝色", tapes=[yachiyo.key], kinds=["message"])
    assert (messages.total, messages.by_tape[yachiyo.key].total) == (3, 2)
    assert engine.count("蓝色", tape_key="no-such-tape").total == 0


def test_bub_loop_events_fold_under_the_users_message(realistic):
    hits = engine.search("中文", tape_key=realistic.key)
    assert folded(hits, realistic) == {
        (90, "message", "user"): [(87, "loop.start"), (88, "loop.step.start")],
        (91, "message", "assistant"): [],
    }


def test_bub_handoff_events_fold_under_their_anchor(realistic):
    hits = engine.search("context_length_exceeded", tape_key=realistic.key)
    assert folded(hits, realistic) == {
        (70, "anchor", "auto_handoff/context_overflow"): [(71, "handoff"), (72, "loop.step")]
    }


# The page


def test_the_page_groups_hits_by_session_with_counts(viewer_client, yachiyo):
    page = viewer_client.get(reverse("search:search"), {"q": "蓝色"}).content.decode()
    assert "22 matching entries" in page
    assert page.count('<tbody class="session">') == 3
    assert page.count(f'href="/tapes/{yachiyo.key}/"') == 1  # one heading per session
    heading = page[page.index(f'href="/tapes/{yachiyo.key}/"') :]
    assert '<span class="count">15 matching entries</span>' in heading[: heading.index("</th>")]
    assert "+3 copies" in page and "+5 copies" in page
    assert f'href="/tapes/{yachiyo.key}/?at=18#e18"' in page  # the stream delta, under its message
    assert "llm.stream.delta" in page and page.count('class="snippet"') == 6


def test_htmx_results_carry_the_counts(viewer_client, yachiyo):
    response = viewer_client.get(reverse("search:search"), {"q": "蓝色"}, headers={"HX-Request": "true"})
    page = response.content.decode()
    assert page.lstrip().startswith('<div id="results">') and "22 matching entries" in page
