"""A keyboard user pressing `e` on a timeline: the error jumped to has the focus, on this page or the next."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes.models import Tape
from tests.browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CURRENT = re.compile(r"\bkb-current\b")


@pytest.fixture
def timeline(page: Page, site: str, user_factory) -> str:
    """Signed in; the address of session_realistic's timeline (97 entries, errors at 21, 96, 97)."""
    user_factory("vera", "viewer")
    sign_in(page, site)
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    return f"{site}/tapes/{Tape.objects.get(name='session_realistic').key}/"


def test_the_error_e_opens_on_a_later_page_has_the_focus_as_on_the_same_page(
    page: Page, timeline: str
) -> None:
    page.goto(timeline)
    page.keyboard.press("e")
    expect(page.locator("#e21")).to_be_focused()  # on this page
    expect(page.locator("#e21")).to_have_class(CURRENT)
    expect(page.locator("#e96")).to_have_count(0)

    page.keyboard.press("e")
    expect(page).to_have_url(re.compile(r"\?at=96#e96$"))
    expect(page.locator("#e96")).to_be_focused()  # on the page it opened
    expect(page.locator("#e96")).to_have_class(CURRENT)
    expect(page.locator("#e96")).to_be_in_viewport()
    assert page.evaluate("document.activeElement.id") == "e96"

    # The next keys start from there.
    page.keyboard.press("e")
    expect(page.locator("#e97")).to_be_focused()
    page.keyboard.press("k")
    expect(page.locator("#e96")).to_be_focused()


def test_a_link_to_an_entry_shows_it_without_taking_the_focus(page: Page, timeline: str) -> None:
    page.goto(f"{timeline}?at=96#e96")
    expect(page.locator("#e96")).to_be_in_viewport()
    expect(page.locator("#e96")).not_to_be_focused()  # only a key of the reader's moves the focus
    page.keyboard.press("e")
    expect(page.locator("#e97")).to_be_focused()
