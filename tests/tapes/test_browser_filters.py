"""The index's filter expression and column picker in a real Chromium, at 1280 and 390 pixels."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from tests import browser
from tests.browser import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def open_index(page: Page, site: str, user_factory, width: int) -> None:
    user_factory("vera", "viewer")
    page.set_viewport_size({"width": width, "height": 900})
    browser.sign_in(page, site, "vera")
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def within(page: Page, selector: str, width: int) -> None:
    box = page.locator(selector).bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (selector, box)


@pytest.mark.parametrize("width", [1280, 390])
def test_a_bad_filter_shows_where_it_goes_wrong_above_the_rows(
    page: Page, site: str, user_factory, width
) -> None:
    open_index(page, site, user_factory, width)
    box = page.get_by_role("textbox", name="Filter expression")
    box.fill("errors > 0 and (kind == bub")
    box.press("Enter")
    error = page.get_by_role("alert")
    expect(error).to_contain_text('at character 28: expected ")", "and" or "or", found the end of the filter')
    expect(page.locator("table.sessions tbody td.label")).to_have_count(0)
    within(page, "p.filter-error", width)
    expect(box).to_have_value("errors > 0 and (kind == bub")  # the form is kept to correct it
    page.screenshot(path=str(ARTIFACTS / f"45-filter-error-{width}.png"))
    box.fill("errors > 0")
    box.press("Enter")
    expect(error).to_have_count(0)
    expect(page.locator("table.sessions tbody td.label")).not_to_have_count(0)
    for cell in page.locator("table.sessions tbody td.errors").all_inner_texts():
        assert int(cell.replace(",", "")) > 0


@pytest.mark.parametrize("width", [1280, 390])
def test_the_column_picker_hides_a_column_and_the_address_keeps_it(
    page: Page, site: str, user_factory, width
) -> None:
    open_index(page, site, user_factory, width)
    expect(page.locator("table.sessions th.c-size")).to_have_count(1)
    page.get_by_text("Columns", exact=True).click()
    within(page, ".column-picker fieldset", width)
    page.screenshot(path=str(ARTIFACTS / f"46-column-picker-{width}.png"))
    page.get_by_role("checkbox", name="Size").uncheck()
    expect(page.locator("table.sessions th.c-size")).to_have_count(0)
    expect(page.locator("table.sessions td.size")).to_have_count(0)
    expect(page.locator("table.sessions th.c-tokens")).to_have_count(1)
    expect(page).to_have_url(re.compile(r"cols=tokens"))
    assert "cols=size" not in page.url
    page.reload()
    expect(page.locator("table.sessions th.c-tokens")).to_have_count(1)
    expect(page.locator("table.sessions th.c-size")).to_have_count(0)
