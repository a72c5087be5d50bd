"""On the live end of a timeline, the header's figures follow what the agent appends (a real Chromium)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .agent import append_line
from .test_browser_live import answer, tape_end  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def figure(name: str) -> str:
    """The value of one of the header's figures, by its name."""
    return f"dl.stats > div:has(> dt:text-is('{name}')) > dd"


def test_the_header_counts_the_entries_the_agent_appends(page: Page, tape_end: Path) -> None:  # noqa: F811
    entries, since = page.locator("#count-entries"), page.locator("#count-since")
    size, activity = page.locator(figure("Size")), page.locator(figure("Activity"))
    expect(entries).to_have_text("97")
    before = {"since": since.inner_text(), "size": size.inner_text(), "activity": activity.inner_text()}

    later = "2026-12-01T09:30:00.000000+00:00"  # after the tape's last entry: Activity moves
    append_line(tape_end, answer(98, "Appended while you watched", later))
    expect(page.locator("#e98")).to_contain_text("Appended while you watched", timeout=2000)
    expect(entries).to_have_text("98")
    expect(since).to_have_text(str(int(before["since"]) + 1))
    expect(size).not_to_have_text(before["size"])
    expect(activity).to_contain_text("2026-12-01 09:30:00")
    assert before["activity"] != activity.inner_text()
    assert page.evaluate("window.notReloaded") is True  # the header changed in place
    expect(page.locator("dl.stats")).to_have_count(1)
