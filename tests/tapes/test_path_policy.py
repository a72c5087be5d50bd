"""A link out of a source root is never shown to viewers; the Sources page says what was refused."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_a_link_to_a_file_outside_is_refused_and_named_on_the_sources_page(
    viewer_client, settings, tmp_path: Path
) -> None:
    root = tmp_path / "tapes"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", root)
    (tmp_path / "shadow").write_text('{"id": 1, "kind": "message", "payload": {"content": "root:SECRET"}}\n')
    os.symlink(tmp_path / "shadow", root / "passwd__x.jsonl")
    os.mkfifo(root / "pipe__y.jsonl")
    settings.TAPEVIEW_SOURCES = f"home=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    report = discovery.sync()

    assert not Tape.objects.filter(name__in=["passwd__x", "pipe__y"]).exists()
    assert any("passwd__x.jsonl: a link to something outside the source" in p for p in report.problems)
    sources = viewer_client.get("/sources/").content.decode()
    assert "passwd__x.jsonl: a link to something outside the source: not read" in sources
    assert "pipe__y.jsonl: not a regular file" in sources
    assert "SECRET" not in viewer_client.get("/").content.decode()
    assert "<mark>SECRET</mark>" not in viewer_client.get("/search/?q=SECRET").content.decode()


def test_a_tape_swapped_for_a_link_out_after_indexing_is_not_read_again(
    viewer_client, settings, tmp_path: Path
) -> None:
    root = tmp_path / "tapes"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", root)
    settings.TAPEVIEW_SOURCES = f"home=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 3600  # no discovery between the swap and the page
    discovery.sync()
    tape = Tape.objects.filter(role="tape").first()
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"id": 1, "kind": "message", "payload": {"role": "user", "content": "SECRET"}}\n')
    os.remove(tape.path)
    os.symlink(outside, tape.path)

    page = viewer_client.get(f"/tapes/{tape.key}/")
    assert page.status_code == 404 and "outside the source" in page.content.decode()
    assert "SECRET" not in viewer_client.get(f"/api/tapes/{tape.key}/entries").content.decode()
