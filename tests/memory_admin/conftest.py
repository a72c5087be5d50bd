"""Fixtures of the memory tests: a Bub zone whose memory was not cleared yet, from the real samples."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import FIXTURES


@pytest.fixture
def zone_before_clear(db, settings, tmp_path: Path) -> Callable[[str], Path]:
    """Index a real Bub sample cut just before the turn that cleared its memory; return the copy.

    Both zone samples end with `memory.clear` and one fresh line: cut there, their zones hold
    notes and long-term lines written over several versions, by tool calls, commands and by hand.
    """
    from memory_admin import catalog
    from memory_admin.stores import bub_zone
    from tapeview.tapes import discovery

    root = tmp_path / "cut"
    root.mkdir()
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0

    def cut(name: str) -> Path:
        sample = FIXTURES / "bub" / name
        zones = bub_zone.read_file(sample).zones
        cleared = next(
            z for before, z in zip(zones, zones[1:], strict=False) if z.is_empty and not before.is_empty
        )
        path = root / name
        shutil.copy(sample, path)
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[: cleared.open_pos - 1]))
        settings.TAPEVIEW_SOURCES = f"cut=bub:{root}"
        discovery.sync()
        catalog.sync_stores()
        return path

    return cut
