"""A real Chromium draws a failed run (an event the tape counts among its errors) as an error, as it
draws an error entry: not in the quiet grey of the agent loop's other events, light or dark."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes.models import Tape

from .test_browser_live import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

FAILED_RUN = 97  # session_realistic.jsonl: `run` with status "error" (formats/bub.md §4)
BAD_BACKGROUND = """() => {
  const probe = document.createElement("div");
  probe.style.background = "var(--badbg)";
  document.body.append(probe);
  const colour = getComputedStyle(probe).backgroundColor;
  probe.remove();
  return colour;
}"""


def test_a_failed_run_is_drawn_as_an_error(page: Page, site: str, user_factory) -> None:
    sign_in(page, site, user_factory)
    tape = Tape.objects.get(source="samples", name="session_realistic")
    page.goto(f"{site}/tapes/{tape.key}/?at={FAILED_RUN}#e{FAILED_RUN}")
    run = page.locator(f"#e{FAILED_RUN}")
    expect(run).to_have_class(re.compile(r"\bk-event\b.*\berror\b"))
    quiet = page.locator("article.k-event:not(.error)").first
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        drawn = run.evaluate("el => getComputedStyle(el).backgroundColor")
        assert (
            drawn
            == page.evaluate(BAD_BACKGROUND)
            != quiet.evaluate("el => getComputedStyle(el).backgroundColor")
        )
