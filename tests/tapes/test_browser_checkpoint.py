"""A real Chromium shows a nanobot summary checkpoint's summary as a muted block, not as a message of
the user's, light or dark."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser import ARTIFACTS

from .test_browser_live import sign_in
from .test_family_anchors import summary_tape
from .test_family_anchors_pages import demo  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# How the browser draws an element, and the page's muted text colour.
LOOK = """el => {
  const probe = document.createElement("span");
  probe.style.color = "var(--muted)";
  document.body.append(probe);
  const muted = getComputedStyle(probe).color;
  probe.remove();
  const s = getComputedStyle(el);
  return {background: s.backgroundColor, color: s.color, border: s.borderLeftStyle, muted};
}"""


@pytest.fixture
def site(live_server, settings, demo: Path) -> str:  # noqa: F811
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    return live_server.url


def test_the_checkpoints_summary_is_a_muted_block_apart_from_the_users_messages(
    page: Page, site: str, user_factory
) -> None:
    sign_in(page, site, user_factory)
    tape, marker = summary_tape()
    page.goto(f"{site}/tapes/{tape.key}/?at={marker}#e{marker}")
    card = page.locator(f"#e{marker}")
    summary = card.locator(".bubble.summary")
    expect(summary).to_be_visible()
    expect(summary).to_contain_text("Working state")
    user = page.locator(f"article.n-user:not(#e{marker}) .bubble.role-user").first  # one the user wrote
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        looks, message = summary.evaluate(LOOK), user.evaluate(LOOK)
        assert looks["background"] != message["background"], scheme
        assert looks["color"] == looks["muted"] != message["color"], scheme
        assert looks["border"] != message["border"], scheme
        card.screenshot(path=str(ARTIFACTS / f"63-checkpoint-summary-{scheme}.png"))
