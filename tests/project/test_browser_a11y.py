"""axe-core in a real Chromium finds no serious or critical accessibility violation on the main pages, light or dark."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from tests.browser import serious_violations
from tests.project.demo_site import DemoSite, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_main_pages_have_no_serious_accessibility_violations(
    browser: Browser, demo_site: DemoSite, scheme: str
) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme)
    page = context.new_page()
    page.goto(f"{demo_site.url}/login/")
    found = serious_violations(page, "signin")
    sign_in(page, demo_site.url)
    for name, path in demo_site.pages.items():
        response = page.goto(demo_site.url + path)
        assert response is not None and response.ok, f"{name}: {path} answered {response and response.status}"
        found += serious_violations(page, name)
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_main_pages_fit_a_phone_without_scrolling_sideways(
    browser: Browser, demo_site: DemoSite, scheme: str
) -> None:
    page = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme).new_page()
    sign_in(page, demo_site.url)
    too_wide = {}
    for name, path in demo_site.pages.items():
        page.goto(demo_site.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            too_wide[name] = width
    assert too_wide == {}
    page.goto(demo_site.url + demo_site.pages["sessions"])
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Audit")).to_be_in_viewport()  # the nav wraps, none falls off
    table = page.locator("table.sessions")
    # Each session is a card: nothing of the table is scrolled away in its own box either.
    assert table.evaluate("t => t.scrollWidth <= t.clientWidth && t.closest('#rows').scrollWidth <= 390")


def test_slash_finds_the_filter_and_question_mark_shows_the_keys(
    browser: Browser, demo_site: DemoSite
) -> None:
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    sign_in(page, demo_site.url)
    box = page.get_by_role("searchbox", name="Filter")
    help = page.get_by_role("dialog", name="Keyboard shortcuts")
    page.keyboard.press("/")
    expect(box).to_be_focused()
    page.keyboard.type("cli?/")  # keys typed into a box are the box's
    expect(box).to_have_value("cli?/")
    expect(help).to_be_hidden()

    page.locator("main h1").click()
    page.keyboard.press("Control+/")  # not a key of ours
    expect(box).not_to_be_focused()
    page.keyboard.press("?")
    expect(help).to_be_visible()
    expect(help).to_contain_text("search: the filter of this page, or the search page")
    page.keyboard.press("Escape")
    expect(help).to_be_hidden()

    # A page with keys of its own cancels the global help to show its own.
    page.evaluate(
        "document.addEventListener('tapeview:help', e => { e.preventDefault(); document.body.dataset.ownHelp = 'shown'; })"
    )
    page.keyboard.press("?")
    expect(page.locator("body")).to_have_attribute("data-own-help", "shown")
    expect(help).to_be_hidden()

    page.goto(demo_site.url + demo_site.pages["tokens"])  # no search box here: "/" goes to the search page
    page.keyboard.press("/")
    expect(page).to_have_url(re.compile(r"/search/$"))
    expect(page.get_by_role("searchbox", name="Search")).to_be_focused()


def held_request(page: Page, held: list[Route]) -> Route:
    """The first request held by the route handler; it reaches Python a moment after the browser sent it."""
    for _ in range(250):
        if held:
            return held.pop(0)
        page.wait_for_timeout(20)
    raise AssertionError("no request was held")


def test_a_busy_indicator_shows_while_an_htmx_request_is_in_flight(
    browser: Browser, demo_site: DemoSite
) -> None:
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    sign_in(page, demo_site.url)
    polls: list[Route] = []
    filters: list[Route] = []

    def hold_htmx(route: Route) -> None:
        if not route.request.headers.get("hx-request"):
            route.continue_()
        elif "q=telegram" in route.request.url:
            filters.append(route)
        else:
            polls.append(route)

    page.route("**/*", hold_htmx)
    busy, status = page.locator("#busy"), page.get_by_role("status")

    # The rows refresh themselves every few seconds: background work, no spinner, nothing said.
    poll = held_request(page, polls)
    expect(busy).to_be_hidden()
    expect(status).to_have_text("")
    poll.continue_()

    page.get_by_role("searchbox", name="Filter").fill("telegram")
    expect(busy).to_be_visible()
    expect(busy).to_have_text("Loading…")
    expect(status).to_have_text("Loading…")
    held_request(page, filters).continue_()
    expect(page.locator("table.sessions tbody tr").first).to_contain_text("telegram")
    expect(busy).to_be_hidden()
    expect(status).to_have_text("")
    page.unroute("**/*")
