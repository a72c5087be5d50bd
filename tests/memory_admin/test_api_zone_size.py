"""The API gives a Bub zone's size and last change as the pages show them: its memory's, not its
tape file's (which comes as a field of its own)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from memory_admin.stores import bub_zone

pytestmark = pytest.mark.django_db


def zone_figures(store: MemoryStore) -> tuple[int, datetime]:
    zone = bub_zone.current_zone(Path(store.path))
    return len(zone.long_term.encode()) + sum(len(n.encode()) for n in zone.daily.values()), zone.date


def test_the_list_and_the_store_give_a_zones_own_size_and_last_change(reader, memory_sources) -> None:
    store = MemoryStore.objects.get(kind="bub.zone")
    size, date = zone_figures(store)
    tape = Path(store.path).stat().st_size
    assert size < tape

    listed = next(s for s in reader.get("/api/memory", limit=500).json()["items"] if s["id"] == store.key)
    detail = reader.get(f"/api/memory/{store.key}").json()

    for body in (listed, detail):
        assert body["size_bytes"] == size
        # JSON times are to the millisecond
        assert abs(datetime.fromisoformat(body["changed_at"]) - date) < timedelta(milliseconds=1)
        assert body["file_size_bytes"] == tape


def test_a_file_store_gives_its_files_size_twice(reader, memory_sources) -> None:
    store = MemoryStore.objects.get(kind="nanobot.memory")
    body = reader.get(f"/api/memory/{store.key}").json()
    assert body["size_bytes"] == body["file_size_bytes"] == Path(store.path).stat().st_size


def test_the_figures_agree_with_the_memory_list_page(reader, viewer_client, memory_sources) -> None:
    store = MemoryStore.objects.get(kind="bub.zone")
    page = viewer_client.get("/memory/?kind=bub").content.decode()
    title = re.search(rf'<td class="num" id="size-{store.key}" title="(\d+) bytes', page).group(1)
    listed = next(s for s in reader.get("/api/memory", limit=500).json()["items"] if s["id"] == store.key)
    assert listed["size_bytes"] == int(title)
