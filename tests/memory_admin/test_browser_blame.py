"""A real Chromium opens a memory zone's blame and follows a line to the tool call that wrote it."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.browser import ARTIFACTS, CHROMIUM, FLAGS, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def test_a_viewer_follows_a_blamed_line_to_the_memory_save_call(
    live_server, settings, zone_before_clear, user_factory
) -> None:
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    zone_before_clear("hand_memory_zone.jsonl")
    user_factory("vera", "viewer")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        sign_in(page, live_server.url)

        page.get_by_role("link", name="Memory").first.click()
        page.get_by_role("link", name="memory zone").first.click()
        page.get_by_role("link", name="Blame").click()
        row = page.locator("table.blame tr", has_text="I prefer Python 3.12 and always want type hints.")
        expect(row.locator("td.author")).to_have_text("agent")
        expect(row.locator("td.source")).to_contain_text("memory_save call")
        page.screenshot(path=str(ARTIFACTS / "11-memory-blame.png"), full_page=True)

        row.get_by_role("link", name="tape entry #9").click()
        expect(page).to_have_url(re.compile(r"/tapes/[0-9a-f]+/entries/9/$"))
        expect(page.locator("main")).to_contain_text("memory_save")
        page.screenshot(path=str(ARTIFACTS / "12-memory-blame-entry.png"))

        page.go_back()
        page.get_by_role("link", name="memory zone").click()  # the crumbs lead back to the store
        page.locator("table.versions tr", has_text="v3").get_by_role("link", name="as of").click()
        expect(page.locator("#past-notice")).to_contain_text("This is a past version")
        expect(page.locator("#long-term")).to_have_text("I prefer Python 3.12 and always want type hints.")
        expect(page.locator("article.daily")).to_have_count(1)  # v4's note came later
        page.screenshot(path=str(ARTIFACTS / "13-memory-as-of.png"))
        browser.close()
