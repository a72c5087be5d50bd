"""A real Chromium: a reviewer works through a review queue with next, previous and the review form,
at a desktop's width and a phone's, and axe finds no serious accessibility violation on the way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tapeview.accounts.audit import Actor
from tapeview.reviews import ledger, queues
from tapeview.tapes.models import Tape
from tests.browser import ARTIFACTS, serious_violations, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def site(live_server, settings, tape_file: Path) -> str:
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    return live_server.url


@pytest.mark.parametrize("width", [1280, 390])
def test_a_reviewer_works_through_a_queue(page: Page, site: str, user_factory, width: int) -> None:
    rita = user_factory("rita", "operator")
    tape = Tape.objects.get(name="a__b")
    queue = queues.create("triage", "the first turn", Actor("ada"))
    queues.add(queue, [queues.target(tape.key, "entry", p) for p in (2, 3)], Actor("ada"), reviewer=rita)
    page.set_viewport_size({"width": width, "height": 900})
    sign_in(page, site, "rita", then="/reviews/queues/")
    found = []

    row = page.locator(f"#queue-{queue.pk}")
    expect(row).to_contain_text("0 / 2")
    expect(row).to_contain_text("rita 0 / 2")
    found += serious_violations(page, "queues")
    row.get_by_role("link", name="triage").click()
    expect(page.get_by_role("heading", name="triage")).to_be_visible()
    found += serious_violations(page, "queue")

    page.get_by_role("link", name="Review the next open item").click()
    expect(page.get_by_role("heading", name="Item 1 of 2")).to_be_visible()
    expect(page.locator(".queue-entry")).to_contain_text("list the files")
    found += serious_violations(page, "item")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(ARTIFACTS / f"queue-item-{width}.png"), full_page=True)

    page.get_by_role("link", name="Next →").click()
    expect(page.get_by_role("heading", name="Item 2 of 2")).to_be_visible()
    page.get_by_role("link", name="← Previous").click()
    expect(page.get_by_role("heading", name="Item 1 of 2")).to_be_visible()

    page.get_by_label("Score").select_option("4")
    page.get_by_label("Labels").fill("clear")
    page.get_by_role("button", name="Save review").click()
    expect(page.get_by_role("heading", name="Item 2 of 2")).to_be_visible()
    expect(page.locator(".messages")).to_contain_text("Review of item 1 recorded.")
    page.get_by_label("Verdict").select_option("fail")
    page.get_by_role("button", name="Save review").click()

    expect(page.locator(".messages")).to_contain_text("No open item is left after this one.")
    expect(page.locator("#progress")).to_contain_text("2 / 2")
    expect(page.locator(".badge.done")).to_have_count(2)
    found += serious_violations(page, "queue done")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert [(r.pos, r.score, r.verdict) for r in ledger.find(tape=tape.key).order_by("pos")] == [
        (2, 4, ""),
        (3, None, "fail"),
    ]
    assert found == [], "\n".join(found)
