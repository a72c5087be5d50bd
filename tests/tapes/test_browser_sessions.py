"""The session index in a real Chromium: it fits the screen, keeps its sort, filters, saves views, is live."""

from __future__ import annotations

import os
import re
import shutil

import pytest
from playwright.sync_api import Page, expect

from tests import browser
from tests.browser import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

HIDE = """() => {
  Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});
  Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'hidden'});
  document.dispatchEvent(new Event('visibilitychange'));
}"""
SHOW = """() => {
  Object.defineProperty(document, 'hidden', {configurable: true, get: () => false});
  Object.defineProperty(document, 'visibilityState', {configurable: true, get: () => 'visible'});
  document.dispatchEvent(new Event('visibilitychange'));
}"""


def sign_in(page: Page, site: str, name: str) -> None:
    browser.sign_in(page, site, name)
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def first_labels(page: Page, n: int = 3) -> list[str]:
    return page.locator("table.sessions tbody td.label > a").all_inner_texts()[:n]


def test_the_index_fits_1280_pixels_with_long_labels_cut_and_titled(
    page: Page, site: str, user_factory
) -> None:
    user_factory("vera", "viewer")
    page.set_viewport_size({"width": 1280, "height": 900})
    sign_in(page, site, "vera")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 1280
    expect(page.locator("table.sessions th.c-errors")).to_be_in_viewport(ratio=1)
    expect(page.locator("table.sessions th.c-tokens")).to_be_in_viewport(ratio=1)
    # A label too long for its column ends in an ellipsis; the whole label is its title.
    long = page.get_by_role("link", name="9d11f561157e98d3__bf2795869dc767e2")
    expect(long).to_have_attribute("title", "9d11f561157e98d3__bf2795869dc767e2")
    assert long.evaluate("a => a.scrollWidth > a.clientWidth")
    # Dates and source names stay on one line.
    for cell in page.locator("table.sessions td.when, table.sessions td.source").all():
        lines = "td => { const r = document.createRange(); r.selectNodeContents(td.firstChild); return r.getClientRects().length }"
        assert cell.evaluate(lines) == 1
    page.screenshot(path=str(ARTIFACTS / "40-index-1280.png"))


def test_the_sort_survives_typing_in_the_filter_and_figures_sort_largest_first(
    page: Page, site: str, user_factory
) -> None:
    user_factory("vera", "viewer")
    sign_in(page, site, "vera")
    page.locator("table.sessions thead").get_by_role("link", name="Tokens").click()
    expect(page.locator("th.c-tokens")).to_have_attribute("aria-sort", "descending")
    expect(page).to_have_url(re.compile(r"sort=-tokens"))
    assert first_labels(page, 1) == ["cli:local"]  # the most tokens first

    page.get_by_placeholder("Filter by label").press_sequentially("session", delay=30)
    expect(page).to_have_url(re.compile(r"q=session.*sort=-tokens|sort=-tokens.*q=session"))
    expect(page.locator("th.c-tokens")).to_have_attribute("aria-sort", "descending")
    expect(page.locator("table.sessions tbody td.label > a").first).to_have_text("session_realistic")
    expect(page.locator("table.sessions tbody tr")).to_have_count(4)
    tokens = [
        int(t.replace(",", ""))
        for t in page.locator("table.sessions td.tokens").all_inner_texts()
        if t != "–"
    ]
    assert tokens == sorted(tokens, reverse=True) and len(tokens) == 4

    # A poll of the rows later, the filter still holds what was typed, and has the focus.
    with page.expect_response(lambda r: "hx-request" in r.request.headers and "q=session" in r.url):
        pass
    expect(page.get_by_placeholder("Filter by label")).to_have_value("session")
    expect(page.get_by_placeholder("Filter by label")).to_be_focused()

    page.locator("table.sessions thead").get_by_role("link", name="Tokens").click()
    expect(page.locator("th.c-tokens")).to_have_attribute("aria-sort", "ascending")
    page.locator("table.sessions thead").get_by_role("link", name="Session").click()
    expect(page.locator("th.c-label")).to_have_attribute("aria-sort", "ascending")  # text: A to Z first


def test_has_errors_and_kind_filter_the_rows(page: Page, site: str, user_factory) -> None:
    user_factory("vera", "viewer")
    sign_in(page, site, "vera")
    rows = page.locator("table.sessions tbody tr")
    everything = rows.count()
    page.get_by_label("has errors").check()
    expect(page).to_have_url(re.compile(r"errors=1"))
    expect(rows).to_have_count(3)
    for cell in page.locator("table.sessions td.errors").all():
        assert int(cell.inner_text()) > 0
    page.get_by_label("Kind").select_option("nanobot")
    expect(page.locator("table.sessions td.empty")).to_have_text(re.compile("No tapes match"))
    page.get_by_label("Kind").select_option("bub")
    expect(rows).to_have_count(3)
    # The quick links above the rows are plain links: they work as GET parameters.
    page.get_by_role("navigation", name="Quick filters").get_by_role("link", name="any").click()
    expect(rows).to_have_count(everything)
    expect(page.get_by_label("Kind")).to_have_value("bub")


def test_a_saved_view_is_saved_opened_and_deleted_by_its_owner_only(
    page: Page, site: str, user_factory
) -> None:
    user_factory("vera", "viewer")
    user_factory("olga", "operator")
    sign_in(page, site, "vera")
    page.get_by_label("has errors").check()
    # The sort links are drawn with the filter once its rows are in (under load that takes a while).
    expect(page.locator("table.sessions tbody tr")).to_have_count(3)
    page.locator("table.sessions thead").get_by_role("link", name="Tokens").click()
    expect(page.locator("th.c-tokens")).to_have_attribute("aria-sort", "descending")
    page.get_by_label("Name of this view").fill("failing, most tokens")
    page.get_by_role("button", name="Save view").click()
    expect(page.locator(".messages")).to_contain_text("Saved the view “failing, most tokens”.")

    page.goto(site + "/")
    expect(page.locator("table.sessions tbody tr")).to_have_count(10)
    page.get_by_role("region", name="Saved views").get_by_role("link", name="failing, most tokens").click()
    expect(page.locator("table.sessions tbody tr")).to_have_count(3)
    expect(page.locator("th.c-tokens")).to_have_attribute("aria-sort", "descending")
    expect(page.get_by_label("has errors")).to_be_checked()
    page.screenshot(path=str(ARTIFACTS / "41-saved-view.png"))

    page.get_by_role("button", name="sign out").click()
    sign_in(page, site, "olga")
    expect(page.get_by_role("region", name="Saved views")).not_to_contain_text("failing, most tokens")
    page.get_by_role("button", name="sign out").click()

    sign_in(page, site, "vera")
    saved = page.get_by_role("region", name="Saved views")
    saved.get_by_label("Delete the saved view failing, most tokens").click()
    expect(saved).to_contain_text(
        "Delete the saved view “failing, most tokens”? The sessions stay as they are."
    )
    saved.get_by_role("button", name="Delete").click()
    expect(page.locator(".messages")).to_contain_text("Deleted the saved view “failing, most tokens”.")
    expect(page.get_by_role("region", name="Saved views").get_by_role("link")).to_have_count(0)


def test_a_new_tape_shows_up_as_a_row_without_a_reload(
    page: Page, site: str, user_factory, bub_samples
) -> None:
    user_factory("vera", "viewer")
    sign_in(page, site, "vera")
    page.evaluate("window.notReloaded = true")
    rows = page.locator("table.sessions tbody tr")
    expect(rows).to_have_count(10)
    shutil.copy(bub_samples / "fork_merged.jsonl", bub_samples / "brand_new_session.jsonl")
    expect(page.get_by_role("link", name="brand_new_session")).to_be_visible(timeout=10_000)
    expect(rows).to_have_count(11)
    expect(page.locator("#tally")).to_have_text("11 of 11 tapes")
    assert page.evaluate("window.notReloaded") is True
    # Its activity reads as a time ago, the exact time on hover.
    when = page.locator("table.sessions tr", has=page.get_by_role("link", name="brand_new_session")).locator(
        "td.last time"
    )
    expect(when).to_have_text(re.compile(r"^(\d+ (s|min|h|d|mo|y) ago|just now)$"))
    expect(when).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$"))


def test_the_rows_stop_polling_while_the_tab_is_hidden(
    page: Page, site: str, user_factory, bub_samples
) -> None:
    user_factory("vera", "viewer")
    sign_in(page, site, "vera")
    expect(page.locator("#live")).to_have_text("live")
    page.evaluate(HIDE)
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if r.headers.get("hx-request") else None)
    shutil.copy(bub_samples / "fork_merged.jsonl", bub_samples / "written_while_hidden.jsonl")
    expect(page.locator("#live")).to_have_text("paused")
    # A poll came due and was held.
    page.wait_for_function("() => Number(document.getElementById('live').dataset.skipped) >= 1", timeout=10_000)
    assert polls == []
    expect(page.get_by_role("link", name="written_while_hidden")).to_have_count(0)

    page.evaluate(SHOW)
    expect(page.locator("#live")).to_have_text("live")
    expect(page.get_by_role("link", name="written_while_hidden")).to_be_visible()
