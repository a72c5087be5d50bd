"""The timeline page keeps what does not change while the tape's index does not (its entry cards, the
context budget, the phase bars and table, whether it seals memory): a page drawn from what was kept
is the page drawn afresh, before and after the tape grows or is replaced, and asks few queries."""

from __future__ import annotations

import itertools
import random
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tapeview.demodata.bub import bub_line, bub_turns
from tapeview.sources import parse_sources
from tapeview.tapes import discovery, index
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "entries"}
NAME = "a1b2c3d4e5f60718__kept.jsonl"


def session(n: int, seed: str = "kept") -> list[str]:
    """The first `n` lines of a generated Bub session that hands off every three turns."""
    turns = bub_turns(random.Random(seed), 1, datetime(2026, 11, 1, tzinfo=UTC), handoff_every=3)
    return [bub_line(e) for e in itertools.islice(turns, n)]


def kinds(lines: list[str]) -> list[str]:
    return [re.search(r'"kind": ?"([a-z_]+)"', line).group(1) for line in lines]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "bub"
    root.mkdir()
    return root


def index_folder(folder: Path) -> Tape:
    discovery.sync(parse_sources([f"kept=bub:{folder}"]))
    return Tape.objects.get(source="kept")


def kept_and_fresh(client, url: str, **headers) -> tuple[str, str]:
    """The page drawn twice (the second from what the first kept), then drawn with nothing kept."""
    client.get(url, **headers)
    kept = client.get(url, **headers)
    cache.clear()
    fresh = client.get(url, **headers)
    assert kept.status_code == fresh.status_code == 200
    return kept.content.decode(), fresh.content.decode()


def without_tokens(html: str) -> str:
    return re.sub(r'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]+', r"\1", html)


def card(html: str, pos: int) -> str:
    found = re.search(rf'<article [^>]*id="e{pos}".*?</article>', html, re.S)
    assert found, f"no card of entry {pos}"
    return found.group(0)


def test_a_call_drawn_before_its_results_shows_them_once_they_are_written(viewer_client, folder) -> None:
    lines = session(400)
    call = next(i for i, k in enumerate(kinds(lines)) if k == "tool_call" and i > 200)
    (folder / NAME).write_text("".join(lines[: call + 1]), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?end=1"
    before, fresh = kept_and_fresh(viewer_client, url)
    assert without_tokens(before) == without_tokens(fresh)
    assert "no result recorded" in card(before, call + 1)

    with (folder / NAME).open("a", encoding="utf-8") as f:
        f.write("".join(lines[call + 1 :]))
    index.refresh(tape)
    url = f"/tapes/{tape.key}/?at={call + 1}"
    after = viewer_client.get(url).content.decode()
    assert "no result recorded" not in card(after, call + 1)
    assert f'results: <a href="#e{call + 2}">' in card(after, call + 1)
    assert f'id="e{call + 2}"' in after  # the new entries are on the page
    kept, fresh = kept_and_fresh(viewer_client, url)
    assert without_tokens(kept) == without_tokens(after) == without_tokens(fresh)


def test_the_budget_and_phases_kept_follow_the_tape_as_it_grows(viewer_client, folder) -> None:
    lines = session(600)
    anchors = [i for i, k in enumerate(kinds(lines)) if k == "anchor"]
    cut = anchors[3] - 5  # a few entries short of the fourth phase
    (folder / NAME).write_text("".join(lines[:cut]), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at={cut // 2}"
    before, _ = kept_and_fresh(viewer_client, url)

    with (folder / NAME).open("a", encoding="utf-8") as f:
        f.write("".join(lines[cut:]))
    index.refresh(tape)
    after = viewer_client.get(url).content.decode()
    bars = lambda html: len(re.findall(r'class="pic-phase"', html))  # noqa: E731
    assert bars(after) > bars(before)
    tokens = lambda html: re.search(r'id="budget-tokens">([^<]*)<', html).group(1)  # noqa: E731
    assert tokens(after) != tokens(before)
    kept, fresh = kept_and_fresh(viewer_client, url)
    assert without_tokens(kept) == without_tokens(after) == without_tokens(fresh)


def test_a_tape_replaced_by_another_file_shows_the_new_one(viewer_client, folder) -> None:
    (folder / NAME).write_text("".join(session(300, "first")), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at=40"
    kept_and_fresh(viewer_client, url)
    first = viewer_client.get(url).content.decode()

    (folder / NAME).write_text("".join(session(120, "second")), encoding="utf-8")
    index.refresh(tape)
    tape.refresh_from_db()
    assert tape.next_pos == 121
    replaced = viewer_client.get(url).content.decode()
    assert card(replaced, 40) != card(first, 40)
    kept, fresh = kept_and_fresh(viewer_client, url)
    assert without_tokens(kept) == without_tokens(replaced) == without_tokens(fresh)


def test_a_page_kept_is_404_once_its_file_is_gone(viewer_client, folder) -> None:
    (folder / NAME).write_text("".join(session(200)), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at=100"
    assert viewer_client.get(url).status_code == viewer_client.get(url, **HTMX).status_code == 200
    (folder / NAME).unlink()
    assert viewer_client.get(url).status_code == viewer_client.get(url, **HTMX).status_code == 404


@pytest.mark.parametrize("query", ["", "?end=1", "?at=150", "?at=151&errors=1", "?anchors=1", "?after=90"])
def test_a_page_drawn_from_kept_cards_is_the_page_drawn_afresh(
    viewer_client, operator_client, folder, query
) -> None:
    (folder / NAME).write_text("".join(session(400)), encoding="utf-8")
    tape = index_folder(folder)
    for client in (viewer_client, operator_client):
        for headers in ({}, HTMX):
            kept, fresh = kept_and_fresh(client, f"/tapes/{tape.key}/{query}", **headers)
            assert without_tokens(kept) == without_tokens(fresh)


def test_a_page_in_the_middle_of_a_long_tape_asks_few_queries(viewer_client, folder, settings) -> None:
    (folder / NAME).write_text("".join(session(10_000)), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at={tape.entries // 2}"
    viewer_client.get(url)
    copies = int(bool(settings.TAPEVIEW_COPY_FILES))
    # The session, the user and their role, the tape, its attachments, the reviews (their summary,
    # those of the entries); the page of entries, the budget, phases and cards are kept while the
    # tape's index is the same. Before: 17 (18 where the host copies its files).
    with CaptureQueriesContext(connection) as asked:
        page = viewer_client.get(url)
    assert page.status_code == 200 and len(asked.captured_queries) <= 7 + copies
    with CaptureQueriesContext(connection) as asked:
        fragment = viewer_client.get(url, **HTMX)
    assert fragment.status_code == 200 and len(asked.captured_queries) <= 5 + copies
    assert f'id="e{tape.entries // 2}"' in fragment.content.decode()
