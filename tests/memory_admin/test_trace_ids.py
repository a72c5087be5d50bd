"""The yachiyo store page's From column: a trace id is cut short to fit, its whole id in the title and
one click away as text to select and copy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db


def from_cells(page: str) -> dict[str, str]:
    """The From cell of each entry's row, by entry id."""
    rows = re.findall(r'<tr id="entry-([^"]+)">(.*?)</tr>', page, re.S)
    return {entry: re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[3] for entry, row in rows}


def test_a_cut_trace_id_has_the_whole_id_as_its_title_and_as_text(viewer_client, memory_sources) -> None:
    memory = MemoryStore.objects.get(kind="yachiyo.memory")
    entries = json.loads(Path(memory.path).read_text())["entries"]
    traces = {e["id"]: e["source_trace_id"] for e in entries if e.get("source_trace_id")}
    assert traces and all(len(t) > 14 for t in traces.values())
    cells = from_cells(viewer_client.get(f"/memory/{memory.key}/").content.decode())
    assert len(cells) == len(entries)
    for entry, trace in traces.items():
        cell = cells[entry]
        assert f'<summary title="{trace}">trace {trace[:13]}…</summary>' in cell
        assert re.search(rf"<code[^>]*>{re.escape(trace)}</code>", cell)
