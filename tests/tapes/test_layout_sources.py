"""The Sources page and the session index's figures in a real Chromium: the Sources table fits the
page from a phone to a wide screen, and a big figure on the session index is never cut."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tapeview.tapes.models import Tape
from tests.project.conftest import browser, demo_site  # noqa: F401 (fixtures)
from tests.project.demo_site import DemoSite, sign_in
from tests.tapes.test_layout_fits import CUT_CELLS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture
def unread(demo_site: DemoSite) -> Path:  # noqa: F811
    """A folder of the demo's Bub source that it does not read, with tape folders of long names below."""
    tape = Tape.objects.filter(kind="bub", role="tape").first()
    legacy = Path(tape.path).parent / "legacy"
    for name in ("2025-archive-of-the-research-agent-before-the-migration", "laptop-sessions-kept-by-hand"):
        (legacy / name).mkdir(parents=True)
        shutil.copy(tape.path, legacy / name / Path(tape.path).name)
    return legacy


@pytest.mark.parametrize("width", [390, 1280, 1600, 1920])
def test_the_sources_table_fits_the_page(
    browser: Browser,  # noqa: F811
    demo_site: DemoSite,  # noqa: F811
    unread: Path,
    width: int,
) -> None:
    page = browser.new_context(viewport={"width": width, "height": 900}).new_page()
    sign_in(page, demo_site.url)
    page.goto(f"{demo_site.url}/sources/")
    assert "found 2 Bub tape folders below" in page.content()
    assert page.evaluate("document.scrollingElement.scrollWidth") <= width
    right = page.locator("table.sources").evaluate("t => t.getBoundingClientRect().right")
    assert right <= width
    # Each source's name, kind, counts and problems are on the screen, not scrolled away.
    for cell in page.locator("table.sources tbody tr").first.locator("td").all():
        box = cell.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5


def test_big_figures_on_the_session_index_are_never_cut(browser: Browser, demo_site: DemoSite) -> None:  # noqa: F811
    Tape.objects.filter(role="tape").update(
        entries=200_000, anchors=12_345, entries_since_anchor=107_748, tokens=107_748_123, errors=1_234
    )
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    sign_in(page, demo_site.url)
    assert "200,000" in page.locator("table.sessions").inner_text()
    cells = page.locator("table.sessions td.num")
    assert cells.count() > 10
    assert cells.evaluate_all(CUT_CELLS) == []


def test_a_phone_sees_each_sessions_figures_without_scrolling(browser: Browser, demo_site: DemoSite) -> None:  # noqa: F811
    page = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    sign_in(page, demo_site.url)
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 390
    row = page.locator("table.sessions tbody tr").first
    for part in ("td.label", "td.source", "td.entries", "td.when.last", "td.tokens", "td.errors"):
        box = row.locator(part).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390.5, part
    assert "entries" in row.locator("td.entries").evaluate("td => getComputedStyle(td, '::before').content")
