"""Fixtures of the memory tests: a Bub zone whose memory was not cleared yet, from the real samples,
and zones of many versions."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import FIXTURES

if TYPE_CHECKING:
    from memory_admin.models import MemoryStore


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


@pytest.fixture
def many_versions(db, settings, tmp_path: Path) -> Callable[..., dict[str, MemoryStore]]:
    """Bub zones of many versions, as the agent writes them (one long-term save a version, a minute
    apart, formats/bub.md §8), then indexed: `many_versions(a=50, b=500)` -> their stores by name.

    Version v's long-term text is `version v` and a fact that changes with it; with `kept_from`, a
    line written at that version and never changed after it follows them.
    """
    from memory_admin import catalog
    from memory_admin.models import MemoryStore
    from tapeview.tapes import discovery

    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    start = (FIXTURES / "bub" / "hand_memory_zone.jsonl").read_bytes().splitlines(keepends=True)[:2]

    def line(n: int, kind: str, payload: dict, when: datetime) -> bytes:
        return json.dumps(
            {"id": n, "kind": kind, "payload": payload, "meta": {}, "date": when.isoformat()}
        ).encode()

    def build(kept_from: int | None = None, **counts: int) -> dict[str, MemoryStore]:
        for name, count in counts.items():
            (tmp_path / name).mkdir()
            lines = list(start)  # session/start, then one zone a version
            for v in range(1, count + 1):
                text = [f"version {v}", f"- fact {v % 7} holds at version {v}"]
                if kept_from is not None and v >= kept_from:
                    text.append(f"- kept since version {kept_from}")
                when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=v)
                data = {"content": "\n".join(text), "updated_at": when.isoformat()}
                for kind, payload in (
                    ("anchor", {"name": "memory/open", "state": {"version": v}}),
                    ("event", {"name": "memory.long_term", "data": data}),
                    ("anchor", {"name": "memory/seal", "state": {"version": v}}),
                ):
                    lines.append(line(len(lines) + 1, kind, payload, when) + b"\n")
            (tmp_path / name / "session.jsonl").write_bytes(b"".join(lines))
        settings.TAPEVIEW_SOURCES = ",".join(f"{name}=bub:{tmp_path / name}" for name in counts)
        discovery.sync()
        catalog.sync_stores()
        return {name: MemoryStore.objects.get(kind="bub.zone", source=name) for name in counts}

    return build
