"""A real Chromium on a tape served by the real `tapeview serve`, empty when opened: the agent's first
entries bring the pagers, and the suggested handoff's button waits while the agent is mid-turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.servers import environment, own_database, tapeview_serve
from tests.tapes.test_watcher import api_client

from .agent import append_line
from .test_budget import line, turns

pytestmark = pytest.mark.browser

TIMEOUT = 30


def test_the_first_entries_bring_the_pagers_and_the_handoff_button_follows_the_turns(
    page: Page, tmp_path: Path
) -> None:
    folder, home = tmp_path / "bub", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    tape = folder / "session_new.jsonl"
    tape.write_text("")
    env = environment(
        home,
        f"bub=bub:{folder}",
        TAPEVIEW_REFRESH_SECONDS="0",
        TAPEVIEW_MODEL_WINDOWS="openai:gpt-4o=20000",
        TAPEVIEW_QUIET_SECONDS="0",
    )
    with own_database(env, "tapeview_liveempty") as env, tapeview_serve(env, home) as (base, link, _):
        page.goto(link)  # the one-time sign-in link of the first admin: it may write a handoff
        page.get_by_role("button", name="Sign in as admin").click()
        expect(page.get_by_role("heading", name="Set your password")).to_be_visible()
        key = api_client(env).get(f"{base}/api/tapes", timeout=TIMEOUT).json()["items"][0]["id"]
        page.goto(f"{base}/tapes/{key}/")
        expect(page.locator("#no-entries")).to_have_text("This tape has no entries yet.")
        pagers = page.locator("#entries nav.pager:visible")
        expect(pagers).to_have_count(0)
        page.evaluate("window.notReloaded = true")

        for entry in turns([1000]):  # one whole turn: 6 entries
            append_line(tape, json.dumps(entry) + "\n")
        expect(page.locator("#e6")).to_be_attached(timeout=5000)
        expect(pagers).to_have_count(2)  # above and below the entries
        expect(pagers).to_contain_text(["start of tape #1 – #6 end of tape"] * 2, use_inner_text=True)
        expect(page.locator("#no-entries")).to_have_count(0)
        button = page.locator("#budget").get_by_text("Hand off with that preview…")
        expect(button).to_be_enabled()

        append_line(tape, json.dumps(line(7, "message", {"role": "user", "content": "question 2"})) + "\n")
        expect(pagers).to_contain_text(["#1 – #7"] * 2, timeout=5000)
        expect(button).to_be_disabled()
        expect(page.locator("#handoff-mid-turn")).to_contain_text("The agent is mid-turn")

        for kind, payload in (
            ("message", {"role": "assistant", "content": "answer 2"}),
            ("event", {"name": "run", "data": {"status": "ok", "model": "openai:gpt-4o"}}),
            ("event", {"name": "loop.step", "data": {"status": "ok"}}),
        ):
            n = int(page.locator("#count-entries").inner_text()) + 1
            append_line(tape, json.dumps(line(n, kind, payload)) + "\n")
            expect(page.locator("#count-entries")).to_have_text(str(n), timeout=5000)
        expect(button).to_be_enabled(timeout=5000)
        expect(button).to_have_attribute("href", f"/tapes/{key}/handoff?at=10")
        expect(pagers).to_contain_text(["#1 – #10"] * 2)
        assert page.evaluate("window.notReloaded") is True  # all of it changed in place
    assert "Traceback" not in (home / "serve.log").read_text()
