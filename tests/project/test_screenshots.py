"""The README's screenshots: the main pages over the demo data, light and dark, taken by a real Chromium."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.project.demo_site import DemoSite, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# `make screenshots` writes them into docs/screenshots for the README; a test run, into test-artifacts.
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / os.environ.get("TAPEVIEW_SCREENSHOTS", "test-artifacts/screenshots")
PAGES = ["sessions", "timeline", "turns", "conversation", "prices", "context", "store", "search"]
WIDTH, HEIGHT = 1280, 800
MAX_BYTES = 200_000


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header (its IHDR chunk comes first)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_screenshots_of_the_main_pages_light_and_dark(browser: Browser, demo_site: DemoSite) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    backgrounds: dict[str, dict[str, str]] = {}
    for scheme in ("light", "dark"):
        page = browser.new_context(
            viewport={"width": WIDTH, "height": HEIGHT}, color_scheme=scheme
        ).new_page()
        sign_in(page, demo_site.url)
        for name in PAGES:
            page.goto(demo_site.url + demo_site.pages[name])
            expect(page.locator("main h1").first).to_be_visible()
            page.evaluate(
                "document.activeElement && document.activeElement.blur()"
            )  # no focus ring in the picture
            path = SCREENSHOTS / f"{name}-{scheme}.png"
            path.unlink(missing_ok=True)
            # The file paths are this machine's (a temporary folder): masked, not shown in the README.
            page.screenshot(path=str(path), animations="disabled", mask=[page.locator("dd code")])
            data = path.read_bytes()
            assert png_size(data) == (WIDTH, HEIGHT), path.name
            assert 10_000 < len(data) < MAX_BYTES, f"{path.name}: {len(data)} bytes"
            backgrounds.setdefault(name, {})[scheme] = page.evaluate(
                "getComputedStyle(document.body).backgroundColor"
            )
        page.context.close()
    same = [name for name, colour in backgrounds.items() if colour["light"] == colour["dark"]]
    assert same == [], f"the page background is the same in light and dark mode on {same}"
