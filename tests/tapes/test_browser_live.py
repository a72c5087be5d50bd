"""A real Chromium on the last page of a tape while the agent writes: new entries appear by themselves."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes.models import Tape
from tests import browser
from tests.browser import ARTIFACTS

from .agent import append_line

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def sign_in(page: Page, site: str, user_factory) -> None:
    user_factory("vera", "viewer")
    browser.sign_in(page, site)
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def answer(entry_id: int, text: str, date: str = "2026-11-22T01:40:00.000000+00:00") -> str:
    """An assistant's message as Bub writes it."""
    line = {
        "id": entry_id,
        "kind": "message",
        "payload": {"role": "assistant", "content": text},
        "meta": {},
        "date": date,
    }
    return json.dumps(line, ensure_ascii=False) + "\n"


@pytest.fixture
def tape_end(page: Page, site: str, user_factory, bub_samples: Path) -> Path:
    """The last page of session_realistic (97 entries) open; its file, to append to."""
    sign_in(page, site, user_factory)
    page.goto(f"{site}/tapes/{Tape.objects.get(name='session_realistic').key}/?end=1")
    expect(page.locator("#live-badge")).to_have_text("● live")
    page.evaluate("window.notReloaded = true")
    return bub_samples / "session_realistic.jsonl"


def test_an_entry_the_agent_appends_appears_at_the_bottom_without_a_reload(
    page: Page, tape_end: Path
) -> None:
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    append_line(tape_end, answer(98, "Appended while you watched 🐢"))
    expect(page.locator("#e98")).to_contain_text("Appended while you watched 🐢", timeout=2000)
    expect(page.locator("#e98")).to_be_in_viewport()  # a reader at the bottom stays at the bottom
    append_line(tape_end, answer(99, "And one more"))
    expect(page.locator("#e99")).to_contain_text("And one more", timeout=2000)
    expect(page.locator("#e99")).to_be_in_viewport()
    assert page.evaluate("window.notReloaded") is True
    expect(page.locator("#entries [id=e98]")).to_have_count(1)
    page.screenshot(path=str(ARTIFACTS / "40-live-tail.png"))


def test_a_reader_scrolled_up_keeps_their_place_as_entries_arrive(page: Page, tape_end: Path) -> None:
    page.locator("#e70").scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, -50)")
    place = page.evaluate("window.scrollY")
    assert place + 2000 < page.evaluate("document.documentElement.scrollHeight")  # far from the bottom
    top = page.locator("#e70").bounding_box()["y"]
    append_line(tape_end, answer(98, "Written below where you read"))
    expect(page.locator("#e98")).to_contain_text("Written below where you read", timeout=2000)
    # Where the entry read is on the screen: the boxes above it may change (the budget box says the
    # agent is mid-turn now), and the browser keeps the reader's place by scrolling as much.
    assert abs(page.locator("#e70").bounding_box()["y"] - top) < 1  # scrolled by whole pixels
    expect(page.locator("#e98")).not_to_be_in_viewport()
    expect(page.locator("#e70")).to_be_in_viewport()


def test_an_unfinished_line_shows_as_it_is_and_then_as_the_entry(page: Page, tape_end: Path) -> None:
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    line = answer(98, "Half now, half later")
    append_line(tape_end, line[:40])
    expect(page.locator("#e98")).to_contain_text("unfinished", timeout=2000)
    append_line(tape_end, line[40:])
    expect(page.locator("#e98")).to_contain_text("Half now, half later", timeout=2000)
    expect(page.locator("#entries [id=e98]")).to_have_count(1)


def test_polling_stops_while_the_tab_is_hidden(page: Page, tape_end: Path) -> None:
    badge = page.locator("#live-badge")
    page.evaluate(
        """() => {
        Object.defineProperty(document, "visibilityState", {value: "hidden", configurable: true});
        document.dispatchEvent(new Event("visibilitychange"));
    }"""
    )
    expect(badge).to_have_text("❚❚ paused")
    append_line(tape_end, answer(98, "Written while nobody looked"))
    skipped = int(badge.get_attribute("data-skipped") or 0)
    # Two polls asked for and refused after the line was written, and nothing came.
    page.wait_for_function(
        "(n) => Number(document.getElementById('live-badge').dataset.skipped) >= n", arg=skipped + 2
    )
    expect(page.locator("#e98")).to_have_count(0)

    page.evaluate(
        """() => {
        Object.defineProperty(document, "visibilityState", {value: "visible", configurable: true});
        document.dispatchEvent(new Event("visibilitychange"));
    }"""
    )
    expect(badge).to_have_text("● live")
    expect(page.locator("#e98")).to_contain_text("Written while nobody looked", timeout=2000)


def test_only_the_last_page_follows_the_file(page: Page, tape_end: Path, site: str) -> None:
    key = Tape.objects.get(name="session_realistic").key
    page.goto(f"{site}/tapes/{key}/")
    expect(page.locator("#e1")).to_be_visible()
    expect(page.locator("#live-badge")).to_have_count(0)
    expect(page.locator(".live-edge")).to_have_count(0)
    page.get_by_role("link", name="newer →").first.click()
    expect(page.locator("#live-badge")).to_have_text("● live")
    append_line(tape_end, answer(98, "Reached through the pager"))
    expect(page.locator("#e98")).to_contain_text("Reached through the pager", timeout=2000)
