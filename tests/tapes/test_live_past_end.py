"""A page past the end of a tape (`?after=` beyond its last entry) follows the agent from the tape's
end: what is appended appears alone, not the tape again from its first entry."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import Page, expect

from tapeview.tapes.models import Tape

from .agent import append_line
from .test_browser_live import answer, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.mark.parametrize("after", [97, 500])
def test_an_append_seen_from_past_the_end_arrives_alone(
    page: Page, site: str, user_factory, bub_samples, after: int
) -> None:
    sign_in(page, site, user_factory)
    tape = bub_samples / "session_realistic.jsonl"  # 97 entries
    page.goto(f"{site}/tapes/{Tape.objects.get(name='session_realistic').key}/?after={after}")
    expect(page.locator("#live-badge")).to_have_text("● live")
    expect(page.locator("#entries")).to_contain_text("No entries here")
    append_line(tape, answer(98, "Written after you opened the page"))
    expect(page.locator("#e98")).to_contain_text("Written after you opened the page", timeout=3000)
    page.wait_for_timeout(1500)  # another poll or two: nothing else may come
    for before in ("#e1", "#e50", "#e97"):  # the tape's earlier entries are not drawn again under it
        expect(page.locator(before)).to_have_count(0)
