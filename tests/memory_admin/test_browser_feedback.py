"""A real Chromium saves memory and reads back what it did: the version it made, the header refreshed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser import ARTIFACTS, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def test_an_edit_says_saved_as_its_version_and_the_header_shows_the_new_file(
    page: Page, live_server, settings, memory_sources, user_factory
) -> None:
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    user_factory("olga", "operator")
    user_md = memory_sources["nanobot"] / "workspace" / "USER.md"
    sign_in(page, live_server.url, "olga")
    page.get_by_role("link", name="Memory").first.click()
    page.get_by_role("link", name="USER.md").click()
    size_before = page.locator("#size").get_attribute("title")
    version_before = page.locator("#version").inner_text()
    expect(page.locator("ul.messages")).to_have_count(0)

    page.get_by_role("link", name="Edit").click()
    editor = page.locator("textarea[name=text]")
    editor.press("Control+End")
    editor.type("\n## Travel\n\n- Tokyo in December, a window seat on long flights\n")
    page.get_by_role("button", name="Save", exact=True).click()

    message = page.locator("ul.messages li")
    expect(message).to_have_text(re.compile(r"^Saved as version [0-9a-f]{16}\.$"))
    version = page.locator("#version").inner_text()
    assert version != version_before
    expect(message).to_have_text(f"Saved as version {version}.")
    expect(page.locator("#size")).to_have_attribute("title", f"{Path(user_md).stat().st_size} bytes")
    assert page.locator("#size").get_attribute("title") != size_before
    expect(page.locator("#content")).to_contain_text("window seat on long flights")
    page.screenshot(path=str(ARTIFACTS / "14-memory-saved-as.png"))

    page.reload()  # the header stays as the file is; the message was for that one answer
    expect(page.locator("#version")).to_have_text(version)
    expect(page.locator("#size")).to_have_attribute("title", f"{Path(user_md).stat().st_size} bytes")
    expect(page.locator("ul.messages")).to_have_count(0)


def test_deleting_a_kv_key_asks_first_then_says_what_it_did(
    page: Page, live_server, settings, memory_sources, user_factory
) -> None:
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    user_factory("olga", "operator")
    sign_in(page, live_server.url, "olga")
    page.get_by_role("link", name="Memory").first.click()
    page.get_by_role("link", name="kv.json").first.click()
    row = page.locator("table.kv tr", has_text="user_name")
    row.get_by_role("button", name="Delete").click()
    expect(page.locator("#question")).to_have_text("Delete the key 'user_name'?")
    page.get_by_role("button", name="Yes, do it").click()
    message = page.locator("ul.messages li")
    expect(message).to_have_text(
        re.compile(r"^Deleted the key 'user_name': saved as version [0-9a-f]{16}\.$")
    )
    expect(message).to_contain_text(page.locator("#version").inner_text())
    expect(page.locator("table.kv tr", has_text="user_name")).to_have_count(0)
