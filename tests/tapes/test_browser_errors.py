"""A real Chromium follows a nanobot session's errors: the errors count, "next error", and an export."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes import rows
from tests.browser import ARTIFACTS, sign_in

from .operator_sources import serve, tape

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def site(live_server, settings, tmp_path: Path) -> str:
    serve(settings, tmp_path)
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    return live_server.url


def shot(page: Page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def test_an_operator_follows_a_nanobot_sessions_errors_and_exports_it(
    page: Page, site: str, user_factory, tmp_path: Path
) -> None:
    user_factory("vera", "viewer")
    sign_in(page, site)

    t = tape("discord:1187654321098765432", "old")
    failing = [r.pos for r in rows.of(t).where(errors=True).all()]
    assert len(failing) == t.errors == 10

    page.goto(f"{site}/?source=old")
    row = page.locator(
        "table.sessions tbody tr", has=page.get_by_role("link", name="discord:1187654321098765432")
    )
    expect(row.locator("td.errors a.count")).to_have_text("10")
    row.get_by_role("link", name="discord:1187654321098765432").click()
    expect(page.locator("h1")).to_contain_text("discord:1187654321098765432")
    shot(page, "30-nanobot-session")

    page.locator("#count-errors").click()
    expect(page).to_have_url(f"{site}/tapes/{t.key}/?errors=1")
    expect(page.locator("#only")).to_contain_text("Only the errors of this tape (10)")
    expect(page.locator("#entries article.entry")).to_have_count(10)
    expect(page.locator("#entries article.entry.error")).to_have_count(10)
    expect(page.locator("#entries li.call.error").first).to_contain_text("File not found")
    shot(page, "31-errors-only")

    page.get_by_role("link", name="next error →").click()
    expect(page.locator(f"#e{failing[0]}.target")).to_be_visible()
    page.get_by_role("link", name="next error →").click()
    expect(page.locator(f"#e{failing[1]}.target")).to_be_visible()
    expect(page.locator(f"#e{failing[1]} .result")).to_contain_text("✗ failed")
    page.get_by_role("link", name="← previous error").click()
    expect(page.locator(f"#e{failing[0]}.target")).to_be_visible()
    page.locator(f"#e{failing[0]}").get_by_role("link", name="in the timeline").click()
    expect(page.locator(f"#e{failing[0]}.target")).to_be_visible()
    expect(page.locator(f"#e{failing[0] - 1}")).to_contain_text("read_file")  # the call, in context
    shot(page, "32-next-error")

    with page.expect_download() as info:
        page.locator("#export").get_by_role("link", name="JSONL").click()
    download = info.value
    assert download.suggested_filename == f"discord-1187654321098765432-{t.key}.jsonl"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    lines = saved.read_text().splitlines()
    assert len(lines) == t.entries and json.loads(lines[0])["_type"] == "metadata"

    with page.expect_download() as info:
        page.locator("#export").get_by_role("link", name="Markdown").click()
    saved = tmp_path / info.value.suggested_filename
    info.value.save_as(saved)
    text = saved.read_text()
    assert text.startswith("# discord:1187654321098765432\n") and text.count("**failed**") == 10
