"""A real Chromium on the last page of a tape served by the real `tapeview serve` while the agent
writes: the phase table's current phase and the pager follow the appends, as the header does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.servers import environment, own_database, tapeview_serve
from tests.tapes.test_watcher import api_client

from .agent import append_line

pytestmark = pytest.mark.browser

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "bub"
TIMEOUT = 30


def bub(entry_id: int, kind: str, payload: dict) -> str:
    line = {"id": entry_id, "kind": kind, "payload": payload, "meta": {}, "date": "2026-12-01T09:30:00+00:00"}
    return json.dumps(line) + "\n"


def tool_call(entry_id: int) -> str:
    call = {"id": f"call_{entry_id}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    return bub(entry_id, "tool_call", {"calls": [call]})


def test_the_phase_table_and_the_pager_follow_what_the_agent_appends(page: Page, tmp_path: Path) -> None:
    folder, home = tmp_path / "bub", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    tape = folder / "session_realistic.jsonl"
    shutil.copy(FIXTURES / "session_realistic.jsonl", tape)  # 97 entries, its last phase from #70
    env = environment(home, f"bub=bub:{folder}", TAPEVIEW_REFRESH_SECONDS="0")
    with own_database(env, "tapeview_livephases") as env, tapeview_serve(env, home) as (base, link, _):
        page.goto(link)  # the one-time sign-in link of the first admin
        page.get_by_role("button", name="Sign in as admin").click()
        expect(page.get_by_role("heading", name="Set your password")).to_be_visible()
        key = api_client(env).get(f"{base}/api/tapes", timeout=TIMEOUT).json()["items"][0]["id"]
        page.goto(f"{base}/tapes/{key}/?end=1")
        expect(page.locator("#live-badge")).to_have_text("● live")
        page.evaluate("window.notReloaded = true")
        current = page.locator("#phase-table tbody tr").last
        expect(current.locator(".phase-name")).to_contain_text("auto_handoff/context_overflow")
        expect(current.locator(".count")).to_have_text("27")
        calls = current.locator("td").nth(3)
        before = int(calls.inner_text())
        pagers = page.locator("#entries nav.pager")  # above and below the entries
        expect(pagers).to_contain_text(["– #97", "– #97"])

        append_line(tape, tool_call(98))
        append_line(tape, bub(99, "tool_result", {"results": ["ok"]}))
        expect(page.locator("#count-entries")).to_have_text("99", timeout=10_000)  # the header, as before
        expect(current.locator(".count")).to_have_text("29", timeout=10_000)
        expect(calls).to_have_text(str(before + 1))
        expect(pagers).to_contain_text(["– #99", "– #99"])

        # Sorted by calls, the table keeps its order as it follows, and its links stay the page's.
        page.locator("#phase-table th a", has_text="Calls").click()
        expect(page.locator("#phase-table th[aria-sort]")).to_contain_text("Calls")
        append_line(tape, tool_call(100))
        row = page.locator("#phase-table tr", has_text="auto_handoff/context_overflow")
        expect(row.locator(".count")).to_have_text("30", timeout=10_000)
        expect(page.locator("#phase-table th[aria-sort]")).to_contain_text("Calls")
        assert "after=" not in page.locator("#phase-table th a").first.get_attribute("href")

        # A new anchor starts a phase: its row appears.
        append_line(tape, bub(101, "anchor", {"name": "phase/watched", "state": {"summary": "seen live"}}))
        new = page.locator("#phase-table tr", has_text="phase/watched")
        expect(new).to_have_count(1, timeout=10_000)
        expect(pagers).to_contain_text(["– #101", "– #101"])
        assert page.evaluate("window.notReloaded") is True  # all of it changed in place
        expect(page.locator("#phase-table")).to_have_count(1)
    assert "Traceback" not in (home / "serve.log").read_text()
