"""In a real Chromium: the index's bars over time filter the rows, two ticked sessions are compared,
and both pages read at 1280 and 390 px, light and dark, with no serious axe violation."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Browser, expect

from tests.browser import ARTIFACTS, serious_violations
from tests.project.demo_site import DemoSite, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

SESSIONS_IN = re.compile(r" in ([\d,]+) sessions?$")


@pytest.mark.parametrize(("width", "scheme"), [(1280, "light"), (390, "dark")])
def test_a_bar_filters_the_index_and_two_ticked_sessions_are_compared(
    browser: Browser, demo_site: DemoSite, width: int, scheme: str
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    sign_in(page, demo_site.url)
    found = serious_violations(page, f"sessions {width}")
    assert page.evaluate("document.documentElement.scrollWidth") <= width

    chart = page.get_by_role("group", name=re.compile(r"^entries per (hour|day|month)"))
    expect(chart).to_be_visible()
    bar = chart.locator("a.pic-when").first
    title = bar.locator("title").text_content() or ""
    listed = int(SESSIONS_IN.search(title).group(1).replace(",", ""))
    page.screenshot(path=str(ARTIFACTS / f"80-sessions-bars-{width}-{scheme}.png"))
    bar.click()
    expect(page).to_have_url(re.compile(r"since=.*until="))
    expect(page.locator("#tally")).to_have_text(re.compile(rf"^{listed} of "))
    expect(page.locator("table.sessions tbody tr")).to_have_count(listed)
    page.get_by_role("link", name="all times").click()

    boxes = page.locator("table.sessions input.pick")
    first, second = boxes.nth(0), boxes.nth(1)
    names = [box.get_attribute("aria-label").removeprefix("compare ") for box in (first, second)]
    first.check()
    second.check()
    page.get_by_role("button", name="Compare").click()
    expect(page.get_by_role("heading", name="Side by side")).to_be_visible()
    figures = page.locator("table.compare-figures")
    for name in names:
        expect(figures).to_contain_text(name)
    expect(page.locator("table.steps tbody tr").first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / f"81-compare-{width}-{scheme}.png"), full_page=True)
    found += serious_violations(page, f"compare {width}")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert found == [], "\n".join(found)


def test_a_timeline_leads_to_the_compare_page_with_its_session_chosen(
    browser: Browser, demo_site: DemoSite
) -> None:
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    sign_in(page, demo_site.url)
    page.goto(demo_site.url + demo_site.pages["timeline"])
    label = page.locator("main h1").first.text_content()
    page.get_by_role("link", name="Compare…").click()
    sessions = page.get_by_role("combobox", name="session", exact=True)
    expect(sessions.first.locator("option:checked")).to_have_text(
        re.compile(re.escape((label or "").strip()[:20]))
    )
    sessions.nth(1).select_option(index=1)
    page.get_by_role("button", name="Compare").click()
    expect(page.get_by_role("heading", name="Steps aligned")).to_be_visible()
