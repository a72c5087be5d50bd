"""What an operator reads on the demo: an empty timeline page says why, the memory list
counts a zone's versions as its page does, and the Sources table fits the screen."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from memory_admin.models import MemoryStore
from tapeview.demodata.bub import write_bub_demo
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape
from tests.browser import ARTIFACTS, sign_in

# Playwright's sync API runs an event loop in this thread; the ORM calls below are plain sync code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

NOW = datetime(2026, 11, 21, 23, 30, tzinfo=UTC)


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def empty_state(page: str) -> str:
    found = re.search(r'<p class="empty" id="no-entries">(.*?)</p>', page, re.S)
    return text_of(found.group(1)) if found else ""


@pytest.mark.django_db
def test_a_timeline_page_past_the_end_says_where_the_entries_are_not_that_the_tape_is_empty(
    viewer_client, served
) -> None:
    tape = Tape.objects.filter(entries__gt=10, errors=0).first()
    last = viewer_client.get(f"/tapes/{tape.key}/?end=1").content.decode()
    end = max(int(p) for p in re.findall(r'id="e(\d+)"', last))

    past = viewer_client.get(f"/tapes/{tape.key}/?after={end}").content.decode()
    assert empty_state(past) == f"No entries here: the tape has {tape.entries} entries. ⇤ start · end ⇥"
    assert "has no entries yet" not in past
    assert "#– – #–" not in past  # no pager over nothing, and no "start of tape" there

    none = viewer_client.get(f"/tapes/{tape.key}/?errors=1").content.decode()
    assert empty_state(none) == "No errors in this tape."


@pytest.mark.django_db
def test_an_empty_tape_still_says_it_has_no_entries_yet(viewer_client, served) -> None:
    (served["home"] / "empty__tape.jsonl").write_bytes(b"")
    discovery.sync()
    tape = Tape.objects.get(name="empty__tape")
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert empty_state(page) == "This tape has no entries yet."


@pytest.mark.django_db
def test_the_memory_list_gives_a_zone_the_versions_and_last_change_its_page_lists(
    viewer_client, memory_sources
) -> None:
    zone = MemoryStore.objects.get(kind="bub.zone", path__endswith="hand_memory_zone.jsonl")
    detail = viewer_client.get(f"/memory/{zone.key}/").content.decode()
    table = re.search(r"<h2>Versions</h2>.*?</table>", detail, re.S).group(0)
    rows = re.findall(r"<tr[^>]*><td>v(\d+)</td><td><time datetime=\"([^\"]+)\"", table)
    assert len(rows) > 1
    newest = rows[0][1]
    assert re.search(rf'<dd id="changed"><time datetime="{re.escape(newest)}"', detail)

    listing = viewer_client.get("/memory/").content.decode()
    row = re.search(rf'<tr>\s*<td class="label"><a href="/memory/{zone.key}/">.*?</tr>', listing, re.S).group(
        0
    )
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    assert f'datetime="{newest}"' in cells[5]
    assert text_of(cells[6]) == str(len(rows))


@pytest.fixture
def demo_site(live_server, settings):
    """The live server over the Bub demo in a short folder, as `~/.bub/tapes` would be."""
    root = Path(tempfile.mkdtemp(prefix="w3", dir="/tmp"))
    write_bub_demo(root / "tapes", NOW)
    settings.TAPEVIEW_SOURCES = f"demo-bub=bub:{root / 'tapes'}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    discovery.sync()
    yield live_server.url
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_sources_table_fits_1400_pixels_with_its_notes_wrapped(
    page: Page, demo_site: str, user_factory
) -> None:
    user_factory("vera", "viewer")
    page.set_viewport_size({"width": 1400, "height": 900})
    sign_in(page, demo_site)
    page.goto(f"{demo_site}/sources/")
    tapes = page.locator("table.sources td.tapes")
    expect(tapes).to_contain_text("6 sessions")
    expect(tapes).to_contain_text("(9 files with 1 sidecar, 2 backups)")
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 1400
    expect(page.locator("table.sources th", has_text="Folders not read")).to_be_in_viewport(ratio=1)
    # The note wraps under its figure (on one line it would take some 250 px); the source's name
    # stays on one line.
    assert tapes.evaluate("td => td.getBoundingClientRect().width") < 200
    assert tapes.locator(".sub").evaluate(
        "d => d.getClientRects()[0].height > 1.5 * parseFloat(getComputedStyle(d).lineHeight)"
    )
    name = page.locator("table.sources").get_by_role("link", name="demo-bub", exact=True)
    assert name.evaluate("a => a.getClientRects().length") == 1  # one line box
    page.screenshot(path=str(ARTIFACTS / "w3-sources-1400.png"), full_page=True)


@pytest.mark.django_db
def test_search_tells_apart_the_tapes_that_share_a_label(viewer_client, settings, tmp_path: Path) -> None:
    write_bub_demo(tmp_path / "tapes", NOW)
    settings.TAPEVIEW_SOURCES = f"demo-bub=bub:{tmp_path / 'tapes'}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    page = viewer_client.get("/search/", {"q": "test"}).content.decode()
    groups = [
        text_of(g)
        for g in re.findall(r'<th colspan="3" scope="rowgroup" class="label">(.*?)</th>', page, re.S)
        if text_of(g).startswith("cli:local ")
    ]
    assert len(groups) > 1
    names = [g.split(" · ")[0] for g in groups]  # "cli:local <tape name> · demo-bub · ..."
    assert len(set(names)) == len(names)
    assert all(n.removeprefix("cli:local ") for n in names)
    options = [text_of(o) for o in re.findall(r'<option value="[0-9a-f]{16}"[^>]*>(.*?)</option>', page)]
    local = [o for o in options if o.startswith("cli:local")]
    assert len(local) > 1 and len(set(local)) == len(local)
