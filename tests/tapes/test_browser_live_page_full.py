"""A real Chromium on the live end of a tape while the agent writes: the page takes entries up to a live
page's worth (tapes.live), then says how many newer ones the next page shows, with pagers that say the same; and
the header's "Hand off…" waits while the agent is mid-turn, as the budget's button does."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes import discovery
from tapeview.tapes.live import LIVE_PAGE_SIZE
from tapeview.tapes.models import Tape
from tests.browser import ARTIFACTS, sign_in

from .agent import append_line
from .test_budget import line, turns

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def write(path: Path, *entries: dict) -> None:
    for entry in entries:
        append_line(path, json.dumps(entry) + "\n")


def test_a_live_page_fills_up_then_links_to_the_newer_entries_and_the_header_hand_off_follows_the_turns(
    page: Page, site: str, user_factory, bub_samples: Path, settings
) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 0
    tape = bub_samples / "filling.jsonl"
    tape.write_text("".join(json.dumps(e) + "\n" for e in turns([1000] * 19)))  # 96 entries, between turns
    discovery.sync()
    user_factory("olga", "operator")
    sign_in(page, site, "olga")
    page.goto(f"{site}/tapes/{Tape.objects.get(name='filling').key}/?end=1")
    expect(page.locator("#live-badge")).to_have_text("● live")
    page.evaluate("window.notReloaded = true")
    pagers = page.locator("#entries nav.pager")
    header = page.locator("#handoff-link")
    expect(pagers).to_contain_text(["⇤ start ← older #47 – #96 end of tape"] * 2, use_inner_text=True)
    expect(header).to_be_enabled()

    write(tape, line(97, "message", {"role": "user", "content": "question 20"}))
    expect(page.locator("#e97")).to_be_attached(timeout=5000)
    expect(header).to_be_disabled()  # mid-turn: the header waits, and says why
    expect(page.locator("#handoff-wait")).to_contain_text("The agent is mid-turn")

    write(
        tape,
        line(98, "message", {"role": "assistant", "content": "answer 20"}),
        line(99, "event", {"name": "run", "data": {"status": "ok", "model": "openai:gpt-4o"}}),
        line(100, "event", {"name": "loop.step", "data": {"status": "ok"}}),
    )
    expect(page.locator("#e100")).to_be_attached(timeout=5000)
    expect(header).to_be_enabled(timeout=5000)  # the turn ended
    expect(page.locator("#handoff-wait")).to_have_count(0)
    expect(pagers).to_contain_text(["#47 – #100"] * 2)

    # The page holds #47 – #146 at most (LIVE_PAGE_SIZE): past that, it counts the newer entries.
    write(tape, *(line(n, "message", {"role": "user", "content": f"note {n}"}) for n in range(101, 147)))
    expect(page.locator("#e146")).to_be_attached(timeout=5000)
    write(
        tape,
        line(147, "message", {"role": "user", "content": "question 21"}),
        line(148, "message", {"role": "assistant", "content": "answer 21"}),
    )
    newer = page.locator("#newer-entries")
    expect(newer).to_contain_text("2 newer entries →", timeout=5000)
    expect(header).to_be_disabled()
    expect(page.locator("#e147")).to_have_count(0)
    expect(page.locator("#entries .entry, #entries .anchor")).to_have_count(LIVE_PAGE_SIZE)
    expect(pagers).to_contain_text(["⇤ start ← older #47 – #146 newer → end ⇥"] * 2, use_inner_text=True)
    assert page.evaluate("window.notReloaded") is True  # all of it changed in place
    page.screenshot(path=str(ARTIFACTS / "41-live-page-full.png"))

    newer.get_by_role("link").click()  # the next page: the newer entries, and it follows on
    expect(page.locator("#e148")).to_be_attached()
    expect(pagers).to_contain_text(["⇤ start ← older #147 – #148 end of tape"] * 2, use_inner_text=True)
    expect(page.locator("#live-badge")).to_have_text("● live")
    write(tape, line(149, "event", {"name": "loop.step", "data": {"status": "ok"}}))
    expect(page.locator("#e149")).to_be_attached(timeout=5000)
    expect(header).to_be_enabled(timeout=5000)
