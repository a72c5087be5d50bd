"""Every tape page of the demo fits a phone without scrolling sideways, and the wide layouts give
their short values room (a real Chromium over the demo data of every family)."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Browser, Page

from tests.project.conftest import browser, demo_site  # noqa: F401 (fixtures)
from tests.project.demo_site import DemoSite, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}
TAPE_LINK = re.compile(r'href="(/tapes/[0-9a-z]+/)"')

# Text that runs past the edge of the box that clips it, for the cells that cut with an ellipsis.
CUT_CELLS = """(cells) => cells.flatMap((cell) => {
  const style = getComputedStyle(cell);
  const room = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  return [...cell.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim())
    .filter((n) => { const r = document.createRange(); r.selectNodeContents(n); return r.getBoundingClientRect().width > room + 0.5; })
    .map((n) => n.textContent.trim());
})"""


LINES = "s => Math.round(s.getBoundingClientRect().height / parseFloat(getComputedStyle(s).lineHeight))"


def timelines(page: Page, url: str) -> list[str]:
    """Every tape's timeline: the sessions index's, and the files attached to them (archives, sidecars)."""
    page.goto(f"{url}/")
    found = list(dict.fromkeys(TAPE_LINK.findall(page.content())))
    for path in found:  # grows as attached files are found
        page.goto(url + path)
        found += [p for p in dict.fromkeys(TAPE_LINK.findall(page.content())) if p not in found]
    return found


def scroll_width(page: Page) -> int:
    return page.evaluate("document.scrollingElement.scrollWidth")


def test_no_tape_page_of_the_demo_scrolls_sideways_on_a_phone(browser: Browser, demo_site: DemoSite) -> None:  # noqa: F811
    page = browser.new_context(viewport=PHONE).new_page()
    sign_in(page, demo_site.url)
    paths = timelines(page, demo_site.url)
    assert len(paths) > 15  # the demo's sessions and their attached files
    too_wide = {}
    for path in ["/", *paths, *(f"{p}context" for p in paths)]:
        response = page.goto(demo_site.url + path)
        assert response is not None and response.ok, path
        if scroll_width(page) > PHONE["width"]:
            too_wide[path] = scroll_width(page)
    assert too_wide == {}


def test_wide_pages_give_short_values_room(browser: Browser, demo_site: DemoSite) -> None:  # noqa: F811
    page = browser.new_context(viewport=DESKTOP).new_page()
    sign_in(page, demo_site.url)
    cells = page.locator("table.sessions td.source, table.sessions td.when, table.sessions td.size")
    assert page.locator("table.sessions td.source").count() > 10
    assert cells.evaluate_all(CUT_CELLS) == []  # "demo-nanobot", "46 min ago", "700 bytes" whole

    squeezed = {}
    for path in timelines(page, demo_site.url):
        page.goto(demo_site.url + path)
        for state in page.locator("#entries .anchor .state").all():
            # A short state ("DONE", {"owner": "human"}) reads on one line, not in a column a few letters wide.
            if len(state.inner_text()) <= 24 and state.evaluate(LINES) > 1:
                squeezed[path] = state.inner_text()
    assert squeezed == {}
