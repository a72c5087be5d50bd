"""A real Chromium, driven by Playwright: an operator reviews an entry from the timeline and sees its badge."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes.models import Tape
from tests.browser import ARTIFACTS, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def site(live_server, settings, tape_file: Path) -> str:
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    return live_server.url


def test_an_operator_reviews_an_entry_from_the_timeline_and_sees_the_badge(
    page: Page, site: str, user_factory
) -> None:
    user_factory("olga", "operator")
    key = Tape.objects.get(name="a__b").key
    sign_in(page, site, "olga")
    page.goto(f"{site}/tapes/{key}/")
    control = page.locator("#r3")
    control.get_by_text("review", exact=True).click()
    control.get_by_label("Score").select_option("4")
    control.get_by_label("Verdict").select_option("pass")
    control.get_by_label("Labels").fill("helpful, concise")
    control.get_by_label("Comment").fill("listed all three")
    control.get_by_role("button", name="Save review").click()

    expect(page.locator(".messages")).to_contain_text("Review of #3 recorded.")
    badge = page.locator("#r3 a.badge.review")
    expect(badge).to_have_text("★4 pass helpful concise")
    expect(page.locator(".tape-reviews")).to_contain_text("1 current")
    page.screenshot(path=str(ARTIFACTS / "reviews-1-timeline-badge.png"))

    badge.click()
    expect(page.get_by_role("heading", name="Reviews of entry #3")).to_be_visible()
    page.get_by_label("Score").select_option("5")
    page.get_by_label("Corrects").select_option(index=1)
    page.get_by_role("button", name="Save review").click()
    expect(page.locator("ol.review-history > li")).to_have_count(2)
    expect(page.locator("ol.review-history > li.superseded del")).to_contain_text("listed all three")
    page.screenshot(path=str(ARTIFACTS / "reviews-2-history.png"))


def test_a_viewer_sees_the_badge_but_no_review_control(page: Page, site: str, user_factory) -> None:
    from tapeview.reviews import ledger

    user_factory("vera", "viewer")
    tape = Tape.objects.get(name="a__b")
    ledger.add(tape, 3, "olga", score=2, labels=["slow"])
    sign_in(page, site, "vera")
    page.goto(f"{site}/tapes/{tape.key}/")
    expect(page.locator("#r3 a.badge.review")).to_have_text("★2 slow")
    expect(page.locator("details.review-control")).to_have_count(0)
