"""A folder a source does not read, with agent files in the folders below it: the Sources page names
each as KIND:PATH to add, and `tapeview serve --discover PATH` finds and serves them."""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.utils.html import escape

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def legacy(settings, tmp_path: Path) -> Path:
    """A Bub tapes folder whose `legacy/` holds two Bub tape folders and a nanobot workspace."""
    root = tmp_path / "tapes"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", root)
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", root / "legacy" / "2025" / "tapes")
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", root / "legacy" / "laptop")
    shutil.copytree(FIXTURES / "nanobot" / "legacy-0.1.4" / "workspace", root / "legacy" / "nanobot")
    (root / "legacy" / "empty").mkdir()
    settings.TAPEVIEW_SOURCES = f"home=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    return root / "legacy"


def test_the_sources_page_names_what_the_folders_below_hold_and_how_to_add_them(
    viewer_client, legacy
) -> None:
    page = viewer_client.get("/sources/").content.decode()
    said = re.search(r'<div class="unread"><code>legacy/</code> (.*?)</div>', page, re.S).group(1)
    assert said.startswith(
        "not read: Bub keeps its tapes directly in the tapes folder, never in a subfolder; "
    )
    assert "found 2 Bub tape folders and 1 nanobot workspace below: add them, " in said
    for spec in (
        f"bub:{legacy / '2025' / 'tapes'}",
        f"bub:{legacy / 'laptop'}",
        f"nanobot:{legacy / 'nanobot'}",
    ):
        assert escape(spec) in said
    assert escape(f"`tapeview serve --discover {legacy}`") in said


def test_serve_discover_prints_what_it_found_and_serves_it(legacy, settings, tmp_path, monkeypatch) -> None:
    settings.HOME = tmp_path
    monkeypatch.setattr("waitress.create_server", lambda app, **kw: SimpleNamespace(run=lambda: None))
    monkeypatch.setenv("TAPEVIEW_SOURCES", "")  # serve sets it for its workers; undo that after
    out = io.StringIO()
    call_command("serve", "--discover", str(legacy), "--no-index", stdout=out)
    lines = out.getvalue().splitlines()
    found = [line for line in lines if line.startswith("found ")]
    assert found == [
        f"found bub:{legacy / 'laptop'}",
        f"found nanobot:{legacy / 'nanobot'}",
        f"found bub:{legacy / '2025' / 'tapes'}",
    ]
    assert f"source laptop: bub at {legacy / 'laptop'}" in lines
    assert f"source nanobot: nanobot at {legacy / 'nanobot'}" in lines
    assert f"source 2025: bub at {legacy / '2025' / 'tapes'}" in lines  # a tapes folder: named by its parent
    assert f"nanobot:{legacy / 'nanobot'}" in settings.TAPEVIEW_SOURCES


def test_serve_discover_where_nothing_is_found_says_so(settings, tmp_path, monkeypatch, capsys) -> None:
    settings.HOME = tmp_path
    monkeypatch.setattr("waitress.create_server", lambda app, **kw: SimpleNamespace(run=lambda: None))
    (tmp_path / "nothing").mkdir()
    err = io.StringIO()
    with pytest.raises(SystemExit) as exit:
        call_command(
            "serve", "--discover", str(tmp_path / "nothing"), "--no-index", stdout=io.StringIO(), stderr=err
        )
    assert exit.value.code == 2
    assert (
        err.getvalue()
        == f"tapeview: no agent files found at {tmp_path / 'nothing'} or in the folders below it\n"
    )
