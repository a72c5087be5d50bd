"""The demo data of every family behind a live server, signed in as an admin: what the
accessibility and screenshot tests look at (their fixtures are in tests/project/conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass

from playwright.sync_api import Page, expect

PASSWORD = "a long test password"


@dataclass(frozen=True)
class DemoSite:
    """The live server over the demo data of every family, with an admin and a review."""

    url: str
    pages: dict[str, str]  # name -> path, every main page of a signed-in admin


def sign_in(page: Page, url: str, name: str = "ada") -> None:
    page.goto(f"{url}/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    page.wait_for_load_state()  # app.js is deferred: its keys listen from the load on
