"""A real Chromium jumping again and again: the address holds the last jump's parameters alone."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.tapes.test_browser_keys import timeline  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def test_jumps_in_a_row_leave_one_clean_set_of_parameters(page: Page, timeline: str) -> None:  # noqa: F811
    page.goto(f"{timeline}?at=75")
    form = page.locator("form.jump")
    for at in ("30", "90"):
        form.get_by_label("Jump to entry").fill(at)
        form.get_by_role("button", name="Go").click()
        expect(page.locator(f"#e{at}")).to_be_in_viewport()
        assert urlsplit(page.url).query == f"at={at}"
    form.get_by_label("or to the time").fill("2026-11-22T01:37:39")
    form.get_by_role("button", name="Go").click()
    expect(page.locator("#e68.target")).to_be_visible()
    assert urlsplit(page.url).query == "time=2026-11-22T01%3A37%3A39"
    page.reload()
    expect(page.locator("#e68.target")).to_be_in_viewport()
