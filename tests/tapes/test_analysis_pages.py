"""The timeline's phase table and budget gauge, and the handoff page at the suggested point."""

from __future__ import annotations

import re

import pytest

from tapeview.tapes.models import Tape

from .test_budget import last_reported_since_last_anchor, last_run_model, turns, write_tape
from .test_phases import bub_lines, expected_bub_phases, families  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db


def phase_rows(html: str) -> list[str]:
    table = re.search(r'<table class="phase-table">.*?</table>', html, re.S).group(0)
    return re.findall(r"<tr data-index=.*?</tr>", table, re.S)


def tokens(p: dict) -> int | None:
    t = p["tokens"]
    return None if t["prompt"] is None else t["prompt"] + t["completion"]


def test_the_timeline_shows_a_row_per_phase_with_its_tokens(viewer_client, served) -> None:
    tape = Tape.objects.get(name="session_realistic")
    html = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    expected = expected_bub_phases(served["samples"] / "session_realistic.jsonl")
    rows = phase_rows(html)
    assert len(rows) == len(expected)
    for row, phase in zip(rows, expected, strict=True):
        assert phase["anchor"]["name"] in row and f"{tokens(phase):,}" in row
        assert f'<td class="num{" bad" if phase["errors"] else ""}">{phase["errors"]}</td>' in row


@pytest.mark.parametrize("sort", ["-tokens", "tokens", "-errors", "-calls", "-duration"])
def test_the_phase_table_sorts_by_a_column(viewer_client, served, sort) -> None:
    tape = Tape.objects.get(name="session_realistic")
    expected = expected_bub_phases(served["samples"] / "session_realistic.jsonl")
    value = {
        "tokens": tokens,
        "errors": lambda p: p["errors"],
        "calls": lambda p: p["tool_calls"],
        "duration": lambda p: p["duration_s"],
    }[sort.lstrip("-")]
    want = sorted(
        expected, key=lambda p: (value(p), -p["anchor"]["pos"] if sort[0] == "-" else p["anchor"]["pos"])
    )
    if sort.startswith("-"):
        want.reverse()
    html = viewer_client.get(f"/tapes/{tape.key}/", {"psort": sort}).content.decode()
    assert [re.search(r">([^<]+)</a> <span class=\"count\"", r).group(1) for r in phase_rows(html)] == [
        p["anchor"]["name"] for p in want
    ]
    assert 'aria-sort="' + ("descending" if sort.startswith("-") else "ascending") + '"' in html


def test_htmx_sorting_swaps_the_phase_table_alone(viewer_client, served) -> None:
    tape = Tape.objects.get(name="session_realistic")
    headers = {"HX-Request": "true", "HX-Target": "phase-table"}
    html = viewer_client.get(f"/tapes/{tape.key}/", {"psort": "-tokens"}, headers=headers).content.decode()
    assert html.startswith('<div id="phase-table">') and "<article" not in html
    assert 'href="?psort=tokens"' in html  # the second click reverses


def test_the_timeline_shows_the_budget_gauge(viewer_client, served, settings) -> None:
    lines = bub_lines(served["samples"] / "session_realistic.jsonl")
    reported = last_reported_since_last_anchor(lines)
    settings.TAPEVIEW_MODEL_WINDOWS = {last_run_model(lines): reported * 2}
    html = viewer_client.get(f"/tapes/{Tape.objects.get(name='session_realistic').key}/").content.decode()
    assert re.search(r'<meter id="budget-gauge"[^>]* value="0\.5000"', html)
    assert f'<strong id="budget-tokens">{reported:,}</strong>' in html and "50%" in html
    assert 'id="overflowed"' in html and 'id="budget-warning"' not in html
    settings.TAPEVIEW_MODEL_WINDOWS = {last_run_model(lines): reported + 1}
    html = viewer_client.get(f"/tapes/{Tape.objects.get(name='session_realistic').key}/").content.decode()
    assert 'id="budget-warning"' in html and 'class="budget warn"' in html


def test_the_suggested_handoff_opens_the_handoff_page_with_its_preview(
    operator_client, served, settings
) -> None:
    lines = turns([1000, 3000, 5000])
    settings.TAPEVIEW_MODEL_WINDOWS = {"openai:gpt-4o": 8000}
    k = write_tape(served["samples"], "growing", lines)
    at = [i for i, x in enumerate(lines, 1) if x["payload"].get("name") == "loop.start"][2] - 1
    html = operator_client.get(f"/tapes/{k}/").content.decode()
    assert f'href="/tapes/{k}/handoff?at={at}"' in html
    page = operator_client.get(f"/tapes/{k}/handoff", {"at": at}).content.decode()
    suggested = re.search(r'<div class="pane suggested" id="suggested">.*?</div>', page, re.S).group(0)
    # Up to the point: the user and assistant messages of the first two turns.
    assert f"after entry {at}" in suggested and "4 messages" in suggested


def test_a_family_without_usage_says_its_tokens_are_unknown(viewer_client, families) -> None:  # noqa: F811
    tape = Tape.objects.get(source="ya", name="sess-project-facts")
    html = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert 'id="no-usage"' in html and "yachiyo records no token usage" in html
    assert "window unknown" in html and "estimated with o200k_base" in html
    assert all('<td class="num tokens">–</td>' in row for row in phase_rows(html))
