"""A real Chromium over a tape in Bub's next format: its timeline, its context preview, a handoff."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes import discovery
from tests.browser import ARTIFACTS, sign_in

from .next_tapes import SESSION, make_home

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def next_site(live_server, settings, tmp_path: Path) -> Path:
    root = make_home(tmp_path / "tapes")
    settings.TAPEVIEW_SOURCES = f"home=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    discovery.sync()
    return root


def test_an_operator_reads_a_next_format_tape_and_hands_it_off(
    page: Page, live_server, next_site, user_factory
) -> None:
    site = live_server.url
    user_factory("olga", "operator")
    sign_in(page, site, "olga")
    page.get_by_role("link", name="cli:local").click()
    expect(page.get_by_role("heading", name="cli:local")).to_be_visible()
    # the agent step with three calls, each beside the result Bub keeps in the same step
    page.goto(page.url + "?at=44#e44")
    step = page.locator("#e44")
    expect(step).to_contain_text("fs_read")
    expect(step.locator("li.call.error")).to_contain_text("not a git repository")
    expect(page.locator("[aria-label^='Turn']").first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "next-1-timeline.png"))

    page.locator("aside.phases").get_by_role("link", name="phase/explore-done", exact=True).click()
    anchor = page.locator(".anchor.target, article.target").first
    expect(anchor).to_contain_text("phase/explore-done")
    anchor.get_by_role("link", name="context after").click()
    expect(page.get_by_role("heading", name="What the model would see")).to_contain_text("phase/explore-done")
    context = page.locator("ol.context")
    expect(context).to_contain_text("Continue the task until all targets are completed")
    expect(context).not_to_contain_text("<general_instruct>")  # a system prompt is no context line
    page.screenshot(path=str(ARTIFACTS / "next-2-context.png"))

    page.go_back()
    page.get_by_role("link", name="Hand off…").click()
    page.fill("input[name=name]", "phase/review")
    page.fill("textarea[name=summary]", "Parser checked; 下一步: quoting.")
    page.get_by_role("button", name="Write handoff").click()
    expect(page.locator(".messages")).to_contain_text("Handoff 'phase/review' written")
    expect(page.locator("aside.phases")).to_contain_text("phase/review")
    expect(page.locator("#entries")).to_contain_text("⚓ phase/review")
    line = json.loads((next_site / f"{SESSION}.jsonl").read_bytes().splitlines()[-1])
    assert line["type"] == "build.bub.context.anchor.v1" and line["data"]["step_id"] == 170
    page.screenshot(path=str(ARTIFACTS / "next-3-handoff.png"))
