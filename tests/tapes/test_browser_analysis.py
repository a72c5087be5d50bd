"""A real Chromium along timeline → phase table sorted by tokens → lineage, with the budget gauge in view."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes.models import Tape
from tests.browser import ARTIFACTS, sign_in

from .test_budget import last_reported_since_last_anchor
from .test_phases import bub_lines, expected_bub_phases

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def shot(page: Page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def test_phase_table_sorts_by_tokens_and_the_lineage_opens(
    page: Page, site: str, bub_samples: Path, user_factory, settings
) -> None:
    lines = bub_lines(bub_samples / "session_realistic.jsonl")
    model = [x for x in lines if x["payload"].get("name") == "run"][-1]["payload"]["data"]["model"]
    settings.TAPEVIEW_MODEL_WINDOWS = {model: 5000}  # past the warning threshold
    expected = expected_bub_phases(bub_samples / "session_realistic.jsonl")
    by_tokens = sorted(
        expected, key=lambda p: p["tokens"]["prompt"] + p["tokens"]["completion"], reverse=True
    )
    user_factory("vera", "viewer")
    sign_in(page, site)

    tape = Tape.objects.get(name="session_realistic")
    page.goto(f"{site}/tapes/{tape.key}/")
    gauge = page.locator("#budget meter#budget-gauge")
    expect(gauge).to_be_visible()
    expect(page.locator("#budget-warning")).to_be_visible()
    expect(page.locator("#overflowed")).to_be_visible()
    rows = page.locator("table.phase-table tbody tr")
    expect(rows).to_have_count(len(expected))
    expect(rows.first).to_contain_text(expected[0]["anchor"]["name"])
    shot(page, "20-phase-table-and-gauge")

    page.locator("table.phase-table").get_by_role("link", name="Tokens").click()
    expect(page.locator("table.phase-table th[aria-sort=descending] a")).to_have_text("Tokens ▼")
    expect(rows.first).to_contain_text(by_tokens[0]["anchor"]["name"])
    expect(rows.last).to_contain_text(by_tokens[-1]["anchor"]["name"])
    expect(page).to_have_url(f"{site}/tapes/{tape.key}/")  # swapped by htmx, the timeline stays
    expect(page.locator("#entries article").first).to_be_visible()
    shot(page, "21-phases-by-tokens")

    page.locator("#phase-table").get_by_role("link", name="lineage").click()
    expect(page.get_by_role("heading", name="Handoff lineage")).to_be_visible()
    links = page.locator("ol.lineage > li")
    expect(links).to_have_count(len(expected))
    summaries = [
        x["payload"]["state"]["summary"] for x in lines if x["payload"].get("name", "").startswith("phase/")
    ]
    expect(links.nth(2).locator(".summary-diff del")).to_have_text(summaries[0])
    expect(links.nth(2).locator(".summary-diff ins")).to_have_text(summaries[1])
    shot(page, "22-lineage")

    page.goto(f"{site}/?q=session_realistic")
    cell = page.locator("table.sessions tbody tr td.context")
    expect(cell).to_contain_text(f"{last_reported_since_last_anchor(lines) / 5000:.0%}")
    expect(cell.locator(".badge.overflowed")).to_be_visible()
    shot(page, "23-index-context-column")
