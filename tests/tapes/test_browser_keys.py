"""A real Chromium reading a timeline at speed: kinds hidden, compact lines, folds, keys, links to entries."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes.models import Tape
from tests.browser import ARTIFACTS, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def shot(page: Page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


@pytest.fixture
def timeline(page: Page, site: str, user_factory) -> str:
    """Signed in; the address of session_realistic's timeline (97 entries, errors at 21, 96, 97)."""
    user_factory("vera", "viewer")
    sign_in(page, site)
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    return f"{site}/tapes/{Tape.objects.get(name='session_realistic').key}/"


def test_hidden_kinds_stay_hidden_after_a_reload(page: Page, timeline: str) -> None:
    page.goto(timeline)
    controls = page.locator("#timeline-controls")
    expect(page.locator("#e6")).to_be_visible()
    controls.get_by_label("messages").uncheck()
    controls.get_by_label("anchors").uncheck()
    expect(page.locator("#e6")).to_be_hidden()
    expect(page.locator("#e1")).to_be_hidden()
    expect(page.locator("#e7")).to_be_visible()  # a tool call is still shown

    page.reload()
    expect(controls.get_by_label("messages")).not_to_be_checked()
    expect(controls.get_by_label("tool calls")).to_be_checked()
    expect(page.locator("#e6")).to_be_hidden()
    expect(page.locator("#e1")).to_be_hidden()
    expect(page.locator("#e7")).to_be_visible()
    controls.get_by_label("events").uncheck()
    expect(page.locator("#entries details.fold").first).to_be_hidden()
    expect(page.locator("#e29")).to_be_hidden()  # a command event
    shot(page, "41-kinds-hidden")

    controls.get_by_label("messages").check()
    page.reload()
    expect(page.locator("#e6")).to_be_visible()
    expect(page.locator("#e29")).to_be_hidden()


def test_compact_mode_shows_one_line_per_entry_and_is_remembered(page: Page, timeline: str) -> None:
    page.goto(timeline)
    message = page.locator("#e6")
    expect(message.locator(".bubble")).to_be_visible()
    expect(message.locator(".gist")).to_be_hidden()
    tall = message.bounding_box()["height"]
    page.locator("#timeline-controls").get_by_label("compact").check()
    expect(message.locator(".bubble")).to_be_hidden()
    expect(message.locator(".gist")).to_contain_text("sender_id=human")
    expect(page.locator("#e7 .gist")).to_have_text("bash")
    assert message.bounding_box()["height"] < min(40, tall / 2)
    page.reload()
    expect(page.locator("#timeline-controls").get_by_label("compact")).to_be_checked()
    expect(page.locator("#e6 .bubble")).to_be_hidden()
    assert page.locator("#e20").bounding_box()["height"] < 40
    shot(page, "42-compact")


def test_operational_events_fold_under_their_turn(page: Page, timeline: str) -> None:
    page.goto(timeline)
    turn = page.get_by_role("group", name="Turn 1", exact=True)
    # The user's message through the answer, and the loop's bookkeeping after it.
    expect(turn.locator("article.entry")).to_have_count(12)
    expect(turn.locator(".turn-no")).to_have_text(re.compile(r"^turn 1 \$0\.\d{4}$"))  # with its cost
    expect(turn.locator("#e6")).to_contain_text("user")
    expect(turn.locator("#e13")).to_contain_text("assistant")
    fold = turn.locator("details.fold").first
    expect(fold.locator("> summary")).to_contain_text("3 operational events")
    expect(page.locator("#e9")).to_be_hidden()
    fold.locator("> summary").click()
    expect(page.locator("#e9")).to_be_visible()
    expect(page.locator("#e9")).to_contain_text("ok · openai:gpt-4o-mini · prompt")
    expect(page.locator("#e29")).to_be_visible()  # a command typed by a person is not folded
    expect(page.locator("#e21")).to_be_visible()  # nor is an error
    shot(page, "43-turns-and-folds")


def test_jump_by_time_opens_the_first_entry_at_or_after_it(page: Page, timeline: str) -> None:
    page.goto(timeline)
    form = page.locator("form.jump")
    form.get_by_label("or to the time").fill("2026-11-22T01:37:39")
    form.get_by_role("button", name="Go").click()
    expect(page.locator("#e68.target")).to_be_visible()  # a folded event: its fold opened
    expect(page.locator("#e68.target")).to_be_in_viewport()
    expect(page.locator("#e67")).to_contain_text("2026-11-22 01:37:38")
    expect(page).to_have_url(re.compile(r"time=2026-11-22T01%3A37%3A39"))

    form.get_by_label("or to the time").fill("2030-01-01T00:00:00")
    form.get_by_role("button", name="Go").click()
    expect(page.locator("#time-missed")).to_contain_text("No entry at or after 2030-01-01 00:00:00")
    expect(page.locator("#e97")).to_be_attached()


def test_jump_to_an_entry_on_the_page_already_shown_scrolls_to_it(page: Page, timeline: str) -> None:
    page.goto(timeline)
    form = page.locator("form.jump")
    for at in ("40", "1", "30", "2"):
        page.mouse.wheel(0, 780 if at in ("1", "2") else -780)  # the reader has moved since
        form.get_by_label("Jump to entry").fill(at)
        form.get_by_role("button", name="Go").click()
        expect(page).to_have_url(re.compile(rf"at={at}\b"))
        expect(page.locator(f"#e{at}")).to_be_in_viewport()


def test_keys_move_through_entries_anchors_and_errors(page: Page, timeline: str) -> None:
    page.goto(timeline)
    page.keyboard.press("j")
    expect(page.locator("#e1")).to_be_focused()
    expect(page.locator("#e1")).to_have_class(re.compile(r"\bkb-current\b"))
    page.keyboard.press("j")
    expect(page.locator("#e2")).to_be_focused()
    page.keyboard.press("j")
    expect(page.locator("#e3")).to_be_focused()
    page.keyboard.press("k")
    page.keyboard.press("k")
    expect(page.locator("#e1")).to_be_focused()
    page.keyboard.press("n")
    expect(page.locator("#e32")).to_be_focused()
    expect(page.locator("#e32")).to_be_in_viewport()
    page.keyboard.press("n")
    expect(page.locator("#e45")).to_be_focused()
    page.keyboard.press("p")
    expect(page.locator("#e32")).to_be_focused()
    page.keyboard.press("p")
    page.keyboard.press("p")
    expect(page.locator("#timeline-status")).to_have_text("No earlier anchor on this page")

    page.keyboard.press("e")
    expect(page.locator("#e21")).to_be_focused()
    expect(page.locator("#e21")).to_be_in_viewport()
    page.keyboard.press("j")  # a closed fold is one stop
    expect(
        page.get_by_role("group", name="Turn 2", exact=True).locator("details.fold > summary").first
    ).to_be_focused()
    page.keyboard.press("k")

    # Typing in a field is typing, not moving.
    at = page.locator("form.jump").get_by_label("Jump to entry")
    at.focus()
    page.keyboard.press("j")
    page.keyboard.press("n")
    expect(at).to_be_focused()
    expect(page.locator("#e21")).to_have_class(re.compile(r"\bkb-current\b"))

    # The next error is on a later page: `e` goes there.
    page.locator("#e45").click(position={"x": 5, "y": 5})
    page.keyboard.press("n")
    expect(page.locator("#timeline-status")).to_have_text("No later anchor on this page")
    page.keyboard.press("e")
    expect(page).to_have_url(re.compile(r"\?at=96#e96$"))
    expect(page.locator("#e96.target")).to_be_in_viewport()


def test_question_mark_opens_the_timelines_own_help(page: Page, timeline: str) -> None:
    page.goto(timeline)
    help_box = page.get_by_role("dialog", name="Keys of the timeline")
    expect(help_box).to_be_hidden()
    ask = "() => !document.dispatchEvent(new CustomEvent('tapeview:help', {cancelable: true}))"
    assert page.evaluate(ask) is True  # the timeline answers: base's global help stays closed
    expect(help_box).to_be_visible()
    expect(help_box).to_contain_text("next / previous anchor")
    shot(page, "44-keys-help")
    page.keyboard.press("Escape")
    expect(help_box).to_be_hidden()
    assert page.evaluate(ask) is True
    expect(help_box).to_be_visible()
    assert page.evaluate(ask) is True
    expect(help_box).to_be_hidden()

    page.keyboard.press("?")  # base's key asks the page first
    expect(help_box).to_be_visible()
    expect(page.locator("dialog#help")).to_be_hidden()  # the global help stays closed
    page.keyboard.press("?")
    expect(help_box).to_be_hidden()


def test_copy_link_copies_an_address_that_opens_the_entry(page: Page, timeline: str, site: str) -> None:
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site)
    page.goto(timeline)
    button = page.locator("#e20").get_by_role("link", name="copy link")
    button.click()
    expect(page.locator("#e20").locator(".copy-link")).to_have_text("copied ✓")
    copied = page.evaluate("() => navigator.clipboard.readText()")
    assert copied == f"{timeline}?at=20#e20"
    expect(page).to_have_url(timeline)  # copying is not following

    page.goto(f"{timeline}?end=1")
    expect(page.locator("#e20")).to_have_count(0)
    page.goto(copied)
    expect(page.locator("#e20")).to_be_in_viewport()
    assert page.evaluate("document.querySelector(':target').id") == "e20"
    expect(page.locator("#e20.target")).to_contain_text("fs_read")


def test_a_deep_link_to_a_folded_event_on_a_later_page_opens_it(page: Page, timeline: str) -> None:
    page.goto(f"{timeline}?at=79#e79")
    expect(page.locator("#e79")).to_be_visible()
    expect(page.locator("#e79")).to_be_in_viewport()
    expect(page.locator("#e79")).to_contain_text("step 2")
    expect(page.locator("#e1")).to_have_count(0)
    shot(page, "45-deep-link")
