"""On the live end of a timeline, the context budget follows what the agent appends (a real Chromium)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .agent import append_line
from .test_browser_live import tape_end  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def bub(entry_id: int, kind: str, payload: dict) -> str:
    line = {"id": entry_id, "kind": kind, "payload": payload, "meta": {}, "date": "2026-12-01T09:30:00+00:00"}
    return json.dumps(line) + "\n"


def test_the_budget_box_follows_a_reported_prompt_and_a_new_anchor(page: Page, tape_end: Path) -> None:  # noqa: F811
    tokens, heading = page.locator("#budget-tokens"), page.locator("#budget h2")
    expect(tokens).not_to_have_text("54,321")
    tape = tape_end

    usage = {"prompt_tokens": 54321, "completion_tokens": 10, "total_tokens": 54331}
    run = {"name": "run", "data": {"status": "ok", "model": "openai:gpt-4.1-mini", "usage": usage}}
    append_line(tape, bub(98, "event", run))
    expect(tokens).to_have_text("54,321", timeout=3000)
    expect(page.locator("#budget-source")).to_have_text("prompt tokens as the agent last reported them")

    append_line(tape, bub(99, "anchor", {"name": "phase/watched", "state": {"summary": "seen live"}}))
    expect(heading).to_have_text("Context since phase/watched", timeout=3000)
    expect(tokens).not_to_have_text("54,321")
    assert page.evaluate("window.notReloaded") is True  # the box changed in place
    expect(page.locator("#budget")).to_have_count(1)
