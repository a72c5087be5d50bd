"""The Sources page counts what the session index lists: sessions, with their sidecars and backups apart."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tapeview.demodata.bub import write_bub_demo
from tapeview.tapes import discovery

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 21, 23, 30, tzinfo=UTC)


def cells(page: str, label: str) -> list[str]:
    row = re.search(rf"<tr[^>]*>\s*<td><a [^>]*>{label}</a>.*?</tr>", page, re.S).group(0)
    return [re.sub(r"<[^>]+>", " ", c).split() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def test_the_demo_bub_source_counts_its_sessions_and_names_the_other_files(
    viewer_client, settings, tmp_path: Path
) -> None:
    write_bub_demo(tmp_path / "tapes", NOW)
    settings.TAPEVIEW_SOURCES = f"demo-bub=bub:{tmp_path / 'tapes'}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    sessions = viewer_client.get("/?source=demo-bub").content.decode()
    listed = re.search(r'<small id="tally">(\d+) of', sessions).group(1)
    page = viewer_client.get("/sources/").content.decode()
    tapes, entries = cells(page, "demo-bub")[5:7]
    assert " ".join(tapes) == f"{listed} sessions (9 files with 1 sidecar, 2 backups)"
    assert listed == "6"
    rows = re.findall(r'<td class="num entries">.*?>([\d,]+)<', sessions, re.S)
    # Every file's entries, as /api/sources counts them, and how many of them are not the sessions'.
    assert entries[0] == f"{sum(int(n.replace(',', '')) for n in rows) + 78:,}"
    assert entries[1:5] == ["78", "of", "them", "in"]
