"""The Sources page counts a source's tapes and entries as GET /api/sources does, and says which are sessions."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

pytestmark = pytest.mark.django_db


def cells(page: str, label: str) -> dict[str, str]:
    """The text of the Tapes and Entries cells of one source's row."""
    row = next(r for r in page.split("<tr")[1:] if f">{label}</a>" in r)
    found = {}
    for name in ("tapes", "entries"):
        match = re.search(rf'<td class="num {name}">(.*?)</td>', row, re.S)
        cell = match.group(1) if match else ""
        found[name] = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", cell))).strip()
    return found


def test_the_sources_page_shows_the_apis_counts_and_the_sessions_among_them(
    viewer_client, reader, served
) -> None:
    api = {s["label"]: s for s in reader.get("/api/sources").json()["items"]}
    page = viewer_client.get("/sources/").content.decode()
    home = cells(page, "home")
    listed = reader.get("/api/tapes", source="home", limit=200).json()["items"]  # sessions only
    assert home["tapes"] == f"{len(listed)} sessions ({api['home']['tapes']} files with 1 sidecar, 2 backups)"
    assert len(listed) < api["home"]["tapes"]
    assert home["entries"].startswith(f"{api['home']['entries']:,} ")
    assert "of them in the other files" in home["entries"]


def test_a_source_of_sessions_only_shows_one_number(viewer_client, reader, settings, tmp_path: Path) -> None:
    from tapeview.tapes import discovery

    root = tmp_path / "plain"
    root.mkdir()
    for name in ("session_realistic.jsonl", "hand_memory_zone.jsonl"):
        shutil.copy(FIXTURES / "bub" / name, root / name)
    settings.TAPEVIEW_SOURCES = f"plain=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    api = reader.get("/api/sources").json()["items"][0]
    plain = cells(viewer_client.get("/sources/").content.decode(), "plain")
    assert plain["tapes"] == f"{api['tapes']} sessions" == "2 sessions"
    assert plain["entries"] == f"{api['entries']:,}"
