"""A real Chromium on the turns tree and the conversation: keys, the detail pane loaded by htmx and
kept by a reload, both pages at 1280 and 390 px, light and dark, with no serious axe violation."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tapeview.tapes.models import Tape
from tests.browser import ARTIFACTS, CHROMIUM, FLAGS, serious_violations, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def turns_url(site: str, user_factory) -> str:
    user_factory("olga", "operator")
    return f"{site}/tapes/{Tape.objects.get(name='session_realistic', source='samples').key}"


def signed_in(browser: Browser, site: str, width: int, scheme: str = "light") -> Page:
    page = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme).new_page()
    sign_in(page, site, "olga")
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    return page


def test_keys_move_through_the_tree_and_enter_opens_the_node(
    browser: Browser, site: str, turns_url: str
) -> None:
    page = signed_in(browser, site, 1280)
    page.goto(f"{turns_url}/turns/")
    page.wait_for_load_state()
    page.keyboard.press("j")
    expect(page.locator("#tree-t1 > summary")).to_be_focused()
    page.keyboard.press("j")
    expect(page.locator("#node-t1")).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(page.locator("#node-m9")).to_be_focused()
    page.keyboard.press("Enter")
    pane = page.locator("#node-detail")
    expect(pane.get_by_role("heading", name=re.compile("Model call"))).to_be_visible()
    expect(pane).to_contain_text("2,072 tokens")
    expect(page).to_have_url(re.compile(r"\?node=m9$"))
    expect(page.locator("#node-m9")).to_have_attribute("aria-current", "true")
    pane.get_by_role("link", name="Raw lines").click()
    expect(pane.locator("pre.raw-line").last).to_contain_text('"name": "run"')
    page.keyboard.press("e")  # the next failed node
    expect(page.locator("#node-x20\\.1")).to_be_focused()
    page.keyboard.press("ArrowLeft")  # folds its turn
    expect(page.locator("#tree-t16 > summary")).to_be_focused()
    expect(page.locator("#node-x20\\.1")).to_be_hidden()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#node-x20\\.1")).to_be_visible()
    page.keyboard.press("?")
    expect(page.get_by_role("dialog", name="Keys of the turns")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog", name="Keys of the turns")).to_be_hidden()

    page.reload()  # the deep link selects the same node and tab
    expect(page.locator("#node-m9")).to_have_attribute("aria-current", "true")
    expect(page.locator("#node-detail pre.raw-line").last).to_contain_text('"name": "run"')


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_tree_and_the_conversation_fit_and_pass_axe(
    browser: Browser, site: str, turns_url: str, scheme: str
) -> None:
    found: list[str] = []
    for width in (1280, 390):
        page = signed_in(browser, site, width, scheme)
        for name, path in (("turns", "/turns/?node=x20.1"), ("conversation", "/conversation/")):
            page.goto(turns_url + path)
            page.wait_for_load_state()
            if name == "conversation":
                page.locator("details.tool-fold").first.click()  # a tool call unfolded
                page.locator(".review-control > summary").first.click()  # the review form open
                expect(page.get_by_label("Score of turn 1")).to_be_visible()
            else:
                expect(page.locator("#node-error")).to_have_text("the tool reported an error")
            assert page.evaluate("document.documentElement.scrollWidth") <= width, f"{name} at {width}"
            page.screenshot(path=str(ARTIFACTS / f"turns-{name}-{width}-{scheme}.png"))
            found += serious_violations(page, f"{name} {width} {scheme}")
        page.context.close()
    assert found == [], "\n".join(found)
