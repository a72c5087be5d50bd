"""How the browser tests drive Debian's Chromium (Playwright's own browser download is not used)."""

from __future__ import annotations

import os
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

CHROMIUM = os.environ.get("TAPEVIEW_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
VIEWPORT = {"width": 1400, "height": 1000}
PASSWORD = "a long test password"  # every test user's (tests/conftest.py user_factory)


def sign_in(page, url: str, name: str = "vera", then: str = "") -> None:
    """Sign in at `url`'s login form as `name` (made by user_factory), going on to `then` if given.
    The caller says what it expects to see next."""
    page.goto(f"{url}/login/" + (f"?next={then}" if then else ""))
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def serious_violations(page: Page, name: str) -> list[str]:
    """axe's serious and critical violations on the page, one line each."""
    results = Axe().run(page).response
    return [
        f"{name}: {v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes'][:5]]}"
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]
