"""What the timeline keeps across appends besides its cards (the summaries of the index's full
chunks, the strip's marked rows of full chunks, the phase table's rows, the budget's turn starts and
reports) is the page drawn afresh: with chunks small enough that appends fill some, and after a
reset to another session, which never shows a piece of the old one."""

from __future__ import annotations

import random
import re
import uuid
from pathlib import Path

import pytest
from django.test import override_settings

from tapeview.tapes import budget, bulk, index
from tapeview.tapes.pictures import tallies

from .test_timeline_appends import append
from .test_timeline_speed_caches import HTMX, NAME, index_folder, session, without_tokens

pytestmark = pytest.mark.django_db

SMALL = 64  # entries to a chunk: a few hundred lines fill several, and an append fills more


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "bub"
    root.mkdir()
    return root


@pytest.fixture
def small_chunks(monkeypatch) -> None:
    monkeypatch.setattr(bulk, "CHUNK", SMALL)
    monkeypatch.setattr(tallies, "CHUNK", SMALL)


def drawn(client, url: str, **headers) -> str:
    response = client.get(url, **headers)
    assert response.status_code == 200
    return without_tokens(response.content.decode())


def afresh(client, url: str, **headers) -> str:
    """The page as a restarted server draws it: from a cache of its own, empty (what the page kept
    stays in the default cache, for the next draw after an append)."""
    empty = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": str(uuid.uuid4())}
    }
    with override_settings(CACHES=empty):
        return drawn(client, url, **headers)


def piece(html: str, pattern: str) -> str:
    found = re.search(pattern, html, re.S)
    assert found, pattern
    return found.group(0)


PHASES = r'<div id="phase-table">.*?</table>'
STRIP = r'<figure class="pic-figure" id="tape-strip">.*?</figure>'
BUDGET = r'<section id="budget".*?</section>'
PLACES = ("?at=150", "?at=20", "?end=1", "?errors=1", "?psort=-entries")


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["page", "fragment"])
def test_pages_drawn_across_appends_that_fill_chunks_are_drawn_as_afresh(
    viewer_client, folder, small_chunks, headers
) -> None:
    lines = session(900)
    (folder / NAME).write_text("".join(lines[:300]), encoding="utf-8")
    tape = index_folder(folder)
    urls = [f"/tapes/{tape.key}/{place}" for place in PLACES]
    for url in urls:
        drawn(viewer_client, url, **headers)
    done = 300
    for size in (5, 70, 1, 140, 63, 200):  # within the last chunk, filling one, filling two
        append(folder, tape, lines[done : done + size])
        done += size
        for url in urls:
            kept = drawn(viewer_client, url, **headers)
            assert kept == afresh(viewer_client, url, **headers), (size, url)
    assert tape.entries == done


def test_the_strip_phases_and_budget_after_an_append_are_as_the_tape_is_now(
    viewer_client, folder, small_chunks
) -> None:
    lines = session(700)
    (folder / NAME).write_text("".join(lines[:400]), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at=100"
    before = drawn(viewer_client, url)
    append(folder, tape, lines[400:])
    kept = drawn(viewer_client, url)
    new = afresh(viewer_client, url)
    for pattern in (PHASES, STRIP, BUDGET):
        assert piece(kept, pattern) == piece(new, pattern)
    # The phase the tape ends in has grown: its row is drawn again, the others as they were.
    assert piece(kept, PHASES) != piece(before, PHASES)
    assert piece(kept, STRIP) != piece(before, STRIP)
    assert f"along {tape.entries:,} entries" in piece(kept, STRIP)


def test_a_reset_to_another_session_never_shows_the_old_ones_pieces(
    viewer_client, folder, small_chunks
) -> None:
    first, second = session(800, "first"), session(800, "second")
    assert first[0] == second[0]  # the same bootstrap line: the reset is told by the shrink alone
    (folder / NAME).write_text("".join(first[:500]), encoding="utf-8")
    tape = index_folder(folder)
    urls = [f"/tapes/{tape.key}/{place}" for place in PLACES]
    for url in urls:
        drawn(viewer_client, url)
    append(folder, tape, first[500:])
    old = {url: drawn(viewer_client, url) for url in urls}  # kept from here on

    (folder / NAME).write_text("".join(second[:100]), encoding="utf-8")  # shorter, in place: a reset
    index.refresh(tape)
    append(folder, tape, second[100:])  # longer than the chunks kept of the old one
    assert tape.entries == 800
    for url in urls:
        kept = drawn(viewer_client, url)
        assert kept == afresh(viewer_client, url), url
    assert piece(kept, STRIP) != piece(old[urls[-1]], STRIP)


def reports(rng: random.Random, n: int) -> budget.Turns:
    """Rows as budget._turns keeps them: Bub's turn starts and reports, or user messages, a snapshot
    of nanobot's metadata, an entry too big to parse (kind "")."""
    kinds = [("event", "loop.start"), ("event", "run"), ("message", "user"), ("metadata", ""), ("", "")]
    if rng.random() < 0.3:
        kinds = kinds[2:]  # no loop.start: a user message starts a turn
    pos, kind, name, prompt = [], [], [], []
    for i in range(n):
        k, nm = rng.choice(kinds)
        pos.append(2 * i + 1)
        kind.append(k)
        name.append(nm)
        prompt.append(rng.choice([None, rng.randrange(0, 10_000)]) if k in ("event", "metadata") else None)
    return pos, kind, name, prompt


class Reported:
    """An entry as turn_boundaries reads it."""

    def __init__(self, pos: int, kind: str, name: str, prompt: int | None) -> None:
        self.pos, self.kind, self.name, self.prompt_tokens = pos, kind, name, prompt
        self.tokens, self.cached_tokens = (prompt or 0) + 7, None


@pytest.mark.parametrize("seed", range(300))
def test_the_last_fit_is_the_last_turn_boundary_within_half_the_window(seed) -> None:
    rng = random.Random(seed)
    rows = reports(rng, rng.randrange(0, 40))
    entries = [Reported(*row) for row in zip(*rows, strict=True) if row[1]]  # "": never read whole
    now, end, half = rng.randrange(0, 10_000), 999, rng.randrange(0, 10_000)
    points = budget.turn_boundaries(entries, None, now, end)
    fits = [(pos, tokens) for pos, tokens in points if tokens <= half]
    assert budget.last_fit(rows, now, end, half) == (fits[-1] if fits else None)
