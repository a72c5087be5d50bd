"""A real Chromium edits memory, sees the diff and restores the earlier version."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.browser import ARTIFACTS, CHROMIUM, FLAGS, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def test_operator_edits_memory_sees_the_diff_and_restores(
    live_server, settings, memory_sources, user_factory
) -> None:
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    user_factory("olga", "operator")
    user_md = memory_sources["nanobot"] / "workspace" / "USER.md"
    original = user_md.read_text()
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        sign_in(page, live_server.url, "olga")

        page.get_by_role("link", name="Memory").first.click()
        page.get_by_role("link", name="USER.md").click()
        page.get_by_role("link", name="Edit").click()
        editor = page.locator("textarea[name=text]")
        editor.press("Control+End")
        editor.type("\n## Preferences\n\n- **Metric** units, please\n")
        expect(page.locator("#preview strong").last).to_have_text("Metric")  # the live preview, through htmx
        page.screenshot(path=str(ARTIFACTS / "8-memory-edit.png"))
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.locator("#content")).to_contain_text("Metric units, please")
        assert "Metric** units, please" in user_md.read_text()

        page.get_by_role("link", name="Compare versions").click()
        expect(page.locator("table.diff tr.add", has_text="## Preferences")).to_have_count(1)
        page.screenshot(path=str(ARTIFACTS / "9-memory-diff.png"))

        page.go_back()
        page.get_by_role("button", name="Restore this version").click()
        expect(page.locator("#question")).to_contain_text("Restore version")  # asked first
        assert user_md.read_text() != original
        page.get_by_role("button", name="Yes, do it").click()
        expect(page.locator("#content")).not_to_contain_text("Metric units")
        assert user_md.read_text() == original
        expect(page.locator("table.audit")).to_contain_text("restore")
        page.screenshot(path=str(ARTIFACTS / "10-memory-restored.png"), full_page=True)
        browser.close()
