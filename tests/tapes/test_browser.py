"""A real Chromium, driven by Playwright, along index → timeline → anchor jump → context preview."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tapeview.accounts import signin
from tapeview.accounts.roles import set_role
from tapeview.tapes import discovery
from tests.browser import ARTIFACTS, CHROMIUM, FLAGS, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def shot(page: Page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def test_first_admin_signs_in_by_link_and_audits_a_session(page: Page, site: str) -> None:
    admin = signin.ensure_first_admin()
    set_role(admin, "admin")
    page.goto(f"{site}/signin/{signin.issue(admin)}/")
    page.get_by_role("button", name="Sign in as admin").click()
    expect(page.get_by_role("heading", name="Set your password")).to_be_visible()
    page.fill("input[name=new_password1]", "correct horse battery staple")
    page.fill("input[name=new_password2]", "correct horse battery staple")
    page.get_by_role("button", name="Save password").click()

    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    expect(page.locator("table.sessions")).to_contain_text("telegram:-1001234567890")
    page.get_by_placeholder("Filter by label").fill("cli:local")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)
    shot(page, "1-session-index")

    page.get_by_role("link", name="cli:local").click()
    expect(page.get_by_role("heading", name="cli:local")).to_be_visible()
    expect(page.locator("#e20")).to_contain_text("fs_read")
    expect(page.locator("#e20 li.call.error")).to_contain_text("not a git repository")
    shot(page, "2-timeline")

    page.locator("aside.phases").get_by_role("link", name="auto_handoff/context_overflow", exact=True).click()
    expect(page.locator("#e70.target")).to_be_visible()
    expect(page).to_have_url(f"{site}/tapes/{page.url.split('/tapes/')[1].split('/')[0]}/?at=70")
    expect(page.locator("#e91")).to_contain_text("中文")
    shot(page, "3-anchor-jump")

    page.locator("#e70").get_by_role("link", name="context after").click()
    expect(page.get_by_role("heading", name="What the model would see")).to_contain_text(
        "auto_handoff/context_overflow"
    )
    expect(page.locator("#message-count")).to_have_text("6")
    expect(page.locator("ol.context > li")).to_have_count(6)
    shot(page, "4-context-preview")


def test_pages_work_without_javascript(site: str, user_factory) -> None:
    user_factory("olga", "operator")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_context(java_script_enabled=False).new_page()
        sign_in(page, site, "olga")
        page.fill("input[name=q]", "telegram")
        page.get_by_role("button", name="Filter").click()
        expect(page.locator("table.sessions tbody tr")).to_have_count(1)
        page.get_by_role("link", name="telegram:-1001234567890").click()
        page.get_by_role("link", name="Context preview").click()
        expect(page.locator("#message-count")).to_have_text("2")
        browser.close()


@pytest.fixture
def four_families(live_server, settings, bub_home: Path, tmp_path: Path) -> str:
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    for name in ("nanobot", "yachiyo", "araliya"):
        shutil.copytree(fixtures / name, tmp_path / name)
    settings.TAPEVIEW_SOURCES = (
        f"bub={bub_home},nanobot={tmp_path / 'nanobot' / 'current'},"
        f"yachiyo={tmp_path / 'yachiyo' / 'data'},araliya={tmp_path / 'araliya'}"
    )
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    discovery.sync()
    return live_server.url


def test_the_index_shows_all_four_families_and_each_timeline_opens(
    page: Page, four_families, user_factory
) -> None:
    user_factory("vera", "viewer")
    sign_in(page, four_families)

    page.get_by_role("link", name="Sources").click()
    for kind in ("bub", "nanobot", "yachiyo", "araliya"):
        expect(page.locator("table.sources")).to_contain_text(kind)
    shot(page, "5-sources")

    page.get_by_role("link", name="Sessions").click()
    rows = page.locator("table.sessions")
    labels = {
        "bub": "cli:local",
        "nanobot": "telegram:8123456789",
        "yachiyo": "sess-zh-prefs-0001",
        "araliya": "01a200e4-e18d-7ffd-b1d0-f7592c930f76 (chat)",
    }
    for label in labels.values():
        expect(rows).to_contain_text(label)
    shot(page, "6-four-families")
    for source, label in labels.items():
        page.goto(f"{four_families}/?source={source}")
        page.locator("table.sessions").get_by_role("link", name=label, exact=False).first.click()
        expect(page.locator("h1")).to_contain_text(label)
        expect(page.locator("#entries article").first).to_be_visible()
        shot(page, f"7-timeline-{source}")


def test_operator_hands_off_a_tape_and_finds_the_handoff_by_search(
    page: Page, site: str, user_factory, settings
) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 0
    user_factory("olga", "operator")
    sign_in(page, site, "olga")

    page.get_by_role("link", name="telegram:-1001234567890").click()
    page.get_by_role("link", name="Hand off…").click()
    expect(page.locator("#after")).to_contain_text("0 messages")
    page.fill("input[name=name]", "phase/出荷-review")
    page.fill("textarea[name=summary]", "Release checked; waiting for the 部署 window.")
    shot(page, "11-handoff-form")
    page.get_by_role("button", name="Write handoff").click()
    expect(page.locator(".messages")).to_contain_text("Handoff 'phase/出荷-review' written")
    expect(page.locator("aside.phases")).to_contain_text("phase/出荷-review")
    expect(page.locator("#entries")).to_contain_text("⚓ phase/出荷-review")

    page.get_by_role("link", name="Search").click()
    page.get_by_role("searchbox", name="Search").fill("部署")
    results = page.locator("#results table.results")
    expect(results).to_contain_text("telegram:-1001234567890")
    expect(results.locator("mark").first).to_have_text("部署")
    shot(page, "12-search")
    results.locator("a.snippet").first.click()
    expect(page.locator(".entry.target, .anchor.target")).to_be_visible()
