"""A real Chromium on a tape's first page while the agent writes errors: the "only errors (N)" link and
the header's counts follow the appends, as the entries do, without a reload."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .agent import append_line
from .test_browser_live import sign_in

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def bub(entry_id: int, kind: str, payload: dict) -> str:
    line = {"id": entry_id, "kind": kind, "payload": payload, "meta": {}, "date": "2026-12-01T09:30:00+00:00"}
    return json.dumps(line) + "\n"


def failed_tool(entry_id: int) -> str:
    """A tool's result as Bub writes a failed call: an error dict among the results."""
    failure = {"kind": "tool", "message": "Tool 'bash' execution failed.", "details": {"error": "exit 1"}}
    return bub(entry_id, "tool_result", {"results": [failure]})


def context_error(entry_id: int) -> str:
    return bub(entry_id, "error", {"kind": "not_found", "message": "Anchor 'phase/missing' was not found."})


@pytest.fixture
def short_tape(site: str, bub_samples: Path) -> Path:
    """A tape of five entries, one of them an error: its first page is its last, and follows the agent."""
    path = bub_samples / "session_watched.jsonl"
    path.write_text(
        bub(1, "message", {"role": "user", "content": "list the files"})
        + bub(2, "tool_call", {"calls": []})
        + failed_tool(3)
        + bub(4, "message", {"role": "assistant", "content": "it failed"})
        + bub(5, "event", {"name": "run", "data": {"status": "ok", "model": "openai:gpt-4o"}})
    )
    discovery.sync()
    return path


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_only_errors_link_and_the_header_counts_follow_the_appends(
    page: Page, site: str, user_factory, short_tape: Path
) -> None:
    sign_in(page, site, user_factory)
    page.goto(f"{site}/tapes/{Tape.objects.get(name='session_watched').key}/")
    expect(page.locator("#live-badge")).to_have_text("● live")
    expect(page.locator("#count-entries")).to_have_text("5")
    expect(page.locator("#count-errors")).to_have_text("1")
    expect(page.locator("#only-errors")).to_have_text("only errors (1)")
    page.evaluate("window.notReloaded = true")

    append_line(short_tape, bub(6, "message", {"role": "user", "content": "try again"}))
    append_line(short_tape, failed_tool(7))
    append_line(short_tape, context_error(8))
    expect(page.locator("#e8")).to_be_attached(timeout=5000)
    expect(page.locator("#count-entries")).to_have_text("8", timeout=5000)
    expect(page.locator("#count-errors")).to_have_text("3", timeout=5000)
    expect(page.locator("#only-errors")).to_have_text("only errors (3)", timeout=5000)
    expect(page.locator("#only-errors")).to_have_count(1)
    assert page.evaluate("window.notReloaded") is True  # all of it changed in place


def test_a_page_without_the_only_errors_link_is_sent_none(viewer_client, served) -> None:
    """A tape with no errors when its page was drawn shows no "only errors (N)": its live end sends
    the link only to a page that has one to replace (htmx finds no target for it otherwise)."""
    tape = Tape.objects.get(name="fork_merged")
    html = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert 'id="live-badge"' in html and 'id="only-errors"' not in html and "hx-vals" not in html

    append_line(served["samples"] / "fork_merged.jsonl", failed_tool(13))
    tail = viewer_client.get(f"/tapes/{tape.key}/tail", {"after": 12, "seen": tape.size}).content.decode()
    assert 'id="e13"' in tail and 'id="only-errors"' not in tail
    assert f'<a class="count" href="/tapes/{tape.key}/?errors=1" id="count-errors">1</a>' in tail
