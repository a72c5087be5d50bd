"""GET /api/tapes tells apart the tapes of one label: Bub names every CLI session "cli:local", one
per workspace, and the session index shows each one's file name under it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tapeview.demodata.bub import write_bub_demo
from tapeview.tapes import discovery

pytestmark = pytest.mark.django_db


def test_tapes_of_one_label_differ_by_the_file_name_the_session_index_shows(
    reader, viewer_client, settings, tmp_path: Path
) -> None:
    root = tmp_path / "tapes"
    write_bub_demo(root, datetime(2026, 11, 24, 17, 0, tzinfo=UTC))
    settings.TAPEVIEW_SOURCES = f"demo=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    items = reader.get("/api/tapes", limit=200).json()["items"]
    local = [t for t in items if t["label"] == "cli:local"]
    assert len(local) == 4  # three workspaces, and one tape of an older Bub's naming
    names = {t["name"] for t in local}
    assert len(names) == 4 and all((root / f"{name}.jsonl").is_file() for name in names)
    listing = viewer_client.get("/", {"source": "demo"}).content.decode()
    assert all(f'title="{name}"' in listing for name in names)
    one = reader.get(f"/api/tapes/{local[0]['id']}").json()
    assert one["name"] == local[0]["name"]
