"""What the timeline keeps by the generation of the tape's index, as the page's snapshot of the index
read it (the budget's turn starts and reports), lets go at a reset that leaves everything else it is
kept by as it was: the same last anchor, at the same position, the same model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tapeview.tapes import index, phases, pictures

from .test_timeline_kept_pieces import BUDGET, afresh, append, drawn, piece
from .test_timeline_speed_caches import NAME, index_folder, kinds, session

pytestmark = pytest.mark.django_db

OVER_HALF = 900_000  # prompt tokens past half of gpt-4.1-mini's window: the suggestion is a turn's


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "bub"
    root.mkdir()
    return root


def a_segment_of_turns(lines: list[str]) -> tuple[int, int]:
    """An anchor's line and the next anchor's, with a few turns between them (Bub's loop.start)."""
    found = kinds(lines)
    anchors = [i for i, k in enumerate(found) if k == "anchor" and i > 50]
    for a, b in zip(anchors, anchors[1:], strict=False):
        if sum('"loop.start"' in line for line in lines[a:b]) >= 3:
            return a, b
    raise AssertionError("no segment of three turns")


def reported_otherwise(lines: list[str], after: int) -> list[str]:
    """The lines with every prompt reported after line `after` one token more, the last one past
    half the window (so the suggested handoff is a turn boundary, with a reported prompt's tokens)."""
    runs = [i for i, line in enumerate(lines) if i > after and '"prompt_tokens": ' in line]
    out = list(lines)
    for i in runs:
        out[i] = re.sub(
            r'"prompt_tokens": (\d+)', lambda m: f'"prompt_tokens": {int(m.group(1)) + 1}', out[i]
        )
    out[runs[-1]] = re.sub(r'"prompt_tokens": \d+', f'"prompt_tokens": {OVER_HALF}', out[runs[-1]])
    return out


def test_a_reset_that_keeps_the_last_anchor_where_it_was_suggests_from_the_new_reports(
    viewer_client, folder
) -> None:
    lines = session(500)
    anchor, following = a_segment_of_turns(lines)
    first = reported_otherwise(lines[:following], anchor)  # the last report past half, too
    second = reported_otherwise(first, anchor)  # the same turns, each report one token more
    (folder / NAME).write_text("".join(first), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at={anchor // 2}"
    old = piece(drawn(viewer_client, url), BUDGET)  # the turns read are kept from here on
    assert "Suggested handoff point" in old
    last_anchor = tape.last_anchor_pos

    (folder / NAME).write_text("".join(second[: anchor + 1]), encoding="utf-8")  # shorter: a reset
    index.refresh(tape)
    append(folder, tape, second[anchor + 1 :])
    assert (tape.last_anchor_pos, tape.next_pos) == (last_anchor, following + 1)
    kept = piece(drawn(viewer_client, url), BUDGET)
    assert kept == piece(afresh(viewer_client, url), BUDGET)
    assert kept != old  # the suggestion's tokens are the new reports'


PHASE_BARS = r'<svg class="pic pic-phases".*?</svg>'


def test_the_phase_bars_kept_count_a_phase_added_past_those_they_show(viewer_client, folder) -> None:
    lines = session(3200)
    starts = [i for i, line in enumerate(lines) if '"kind": "anchor"' in line and '"phase/' in line]
    assert len(starts) > pictures.PHASE_BARS + 2
    cut = starts[pictures.PHASE_BARS + 1] + 5  # more phases than the bars show
    (folder / NAME).write_text("".join(lines[:cut]), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at=10"
    before = piece(drawn(viewer_client, url), PHASE_BARS)
    append(folder, tape, lines[cut : starts[pictures.PHASE_BARS + 2] + 5])  # one phase more
    kept = piece(drawn(viewer_client, url), PHASE_BARS)
    assert kept == piece(afresh(viewer_client, url), PHASE_BARS)
    assert f"for {pictures.PHASE_BARS} phases of {phases.count(tape):,}" in kept
    assert kept != before


def seal(entry_id: int) -> str:
    """A Bub anchor line that seals a memory zone."""
    state = {"version": 1, "memory": "prefers concise answers"}
    payload = {"name": "memory/seal", "state": state}
    line = {
        "id": entry_id,
        "kind": "anchor",
        "payload": payload,
        "meta": {},
        "date": "2026-11-02T00:00:00+00:00",
    }
    return json.dumps(line) + "\n"


def test_a_memory_seal_appended_shows_the_memory_zone_link_at_once(viewer_client, folder) -> None:
    lines = session(200)
    (folder / NAME).write_text("".join(lines), encoding="utf-8")
    tape = index_folder(folder)
    url = f"/tapes/{tape.key}/?at=100"
    assert "Memory zone" not in drawn(viewer_client, url)
    append(folder, tape, [seal(10_000)])
    assert "Memory zone" in drawn(viewer_client, url)
    (folder / NAME).write_text("".join(lines[:150]), encoding="utf-8")  # shorter: a reset
    index.refresh(tape)
    assert "Memory zone" not in drawn(viewer_client, url)
