"""A keyboard user on the search page: the box has focus on arrival, and Escape hands the keys back."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def search_page(page: Page, site: str, user_factory) -> str:
    """Signed in; the address of the search page."""
    user_factory("vera", "viewer")
    sign_in(page, site)
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    return f"{site}/search/"


def test_escape_leaves_the_search_box_with_its_words_and_the_keys_work_again(
    page: Page, search_page: str
) -> None:
    page.goto(search_page)
    box = page.get_by_role("searchbox", name="Search")
    help_box = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(box).to_be_focused()  # the page is for typing: the box is ready
    page.keyboard.type("src/app?")  # a slash or a question mark typed into the box is a character
    expect(box).to_have_value("src/app?")
    expect(help_box).to_be_hidden()
    expect(page).to_have_url(re.compile(r"q=src%2Fapp%3F"))

    page.keyboard.press("Escape")
    expect(box).not_to_be_focused()
    expect(box).to_have_value("src/app?")  # the words and their results stay
    expect(page).to_have_url(re.compile(r"q=src%2Fapp%3F"))
    page.keyboard.press("?")
    expect(help_box).to_be_visible()
    page.keyboard.press("Escape")
    expect(help_box).to_be_hidden()

    page.keyboard.press("/")
    expect(box).to_be_focused()
    expect(box).to_have_value("src/app?")  # "/" came back to the box, it typed nothing


def test_escape_in_an_empty_search_box_leaves_it_too(page: Page, search_page: str) -> None:
    page.goto(search_page)
    box = page.get_by_role("searchbox", name="Search")
    expect(box).to_be_focused()
    page.keyboard.press("Escape")
    expect(box).not_to_be_focused()
    page.keyboard.press("?")
    expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_be_visible()
