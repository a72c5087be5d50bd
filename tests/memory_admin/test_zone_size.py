"""A Bub zone's size is its memory's, not its whole tape's, on the memory list and the store page alike."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.template.defaultfilters import filesizeformat

from memory_admin.models import MemoryStore
from memory_admin.stores import bub_zone

pytestmark = pytest.mark.django_db


def test_a_zone_shows_the_size_of_its_memory_on_both_pages(viewer_client, memory_sources) -> None:
    store = MemoryStore.objects.get(kind="bub.zone")
    zone = bub_zone.current_zone(Path(store.path))
    memory = len(zone.long_term.encode()) + sum(len(n.encode()) for n in zone.daily.values())
    tape = Path(store.path).stat().st_size
    assert memory < tape

    listed = viewer_client.get("/memory/?kind=bub").content.decode()
    cell = re.search(
        rf'href="/memory/{store.key}/".*?<td class="num" id="size-{store.key}"[^>]*>(.*?)</td>', listed, re.S
    )
    page = viewer_client.get(f"/memory/{store.key}/").content.decode()
    shown = re.search(r'<dd id="size"[^>]*>(.*?)</dd>', page, re.S)

    assert cell and cell.group(1).startswith(str(filesizeformat(memory)))
    assert shown and shown.group(1).startswith(str(filesizeformat(memory)))
    assert f"tape file: {filesizeformat(tape)}" in shown.group(1)


def test_a_file_store_shows_its_file_size(viewer_client, memory_sources) -> None:
    store = MemoryStore.objects.get(kind="nanobot.memory")
    size = Path(store.path).stat().st_size
    page = viewer_client.get(f"/memory/{store.key}/").content.decode()
    assert re.search(r'<dd id="size"[^>]*>(.*?)</dd>', page, re.S).group(1) == str(filesizeformat(size))
