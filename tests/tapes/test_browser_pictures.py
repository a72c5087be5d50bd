"""A real Chromium sees a bar per phase beside the phase table and clicks one to land at its phase."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes.models import Tape
from tests.browser import ARTIFACTS, sign_in

from .test_phases import expected_bub_phases

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# A bar's fill, and the page's accent colour as the browser computes it.
FILL_AND_ACCENT = """el => {
  const probe = document.createElement("span");
  probe.style.color = "var(--accent)";
  document.body.append(probe);
  const accent = getComputedStyle(probe).color;
  probe.remove();
  return [getComputedStyle(el).fill, accent];
}"""


def test_a_phase_bar_jumps_to_the_first_entry_of_its_phase(
    page: Page, site: str, bub_samples: Path, user_factory
) -> None:
    expected = expected_bub_phases(bub_samples / "session_realistic.jsonl")
    user_factory("vera", "viewer")
    sign_in(page, site)

    tape = Tape.objects.get(name="session_realistic")
    page.goto(f"{site}/tapes/{tape.key}/")
    bars = page.locator("#phase-bars svg a.pic-phase")
    expect(bars).to_have_count(len(expected))
    expect(page.get_by_role("group", name=re.compile(r"^tokens per phase"))).to_be_visible()
    last = expected[-1]
    tokens = last["tokens"]["prompt"] + last["tokens"]["completion"]
    bar = page.get_by_role("link", name=f"phase {last['index']}, {last['anchor']['name']}: ")
    expect(bar).to_have_count(1)
    bar.hover()  # the tooltip a user reads before clicking
    expect(bar.locator("title")).to_have_text(re.compile(rf": {tokens:,} tokens \(prompt "))
    page.locator("#phase-bars").screenshot(path=str(ARTIFACTS / "60-phase-bars.png"))

    # The bars take the page's colours, light or dark (pictures.css, as base.html links it).
    page.add_style_tag(url=f"{site}/static/pictures.css")
    prompt = page.locator("#phase-bars rect.pic-prompt").first
    light = prompt.evaluate(FILL_AND_ACCENT)
    page.emulate_media(color_scheme="dark")
    dark = prompt.evaluate(FILL_AND_ACCENT)
    assert light[0] == light[1] and dark[0] == dark[1] and light[0] != dark[0]
    page.locator("#phase-bars").screenshot(path=str(ARTIFACTS / "62-phase-bars-dark.png"))
    page.emulate_media(color_scheme="light")

    start = last["start_pos"]
    assert start > 50  # not on the first page of the timeline: the click has to take us there
    expect(page.locator(f"#e{start}")).to_have_count(0)
    bar.click()
    expect(page).to_have_url(f"{site}/tapes/{tape.key}/?at={start}#e{start}")
    landed = page.locator(f"#e{start}.target")
    expect(landed).to_be_visible()
    expect(landed).to_contain_text(last["anchor"]["name"])
    expect(landed).to_be_in_viewport()
    page.screenshot(path=str(ARTIFACTS / "61-phase-bar-jumped.png"), full_page=False)
