"""araliya's kv.json is counted in one wording on every page: keys, with the cap."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from memory_admin import catalog
from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db

CHAT = "01a200e4-e18d-7ffd-b1d0-f7592c930f76"  # the real session whose kv.json holds 197 keys


def chat_store() -> MemoryStore:
    return next(s for s in MemoryStore.objects.filter(kind="araliya.kv") if CHAT in s.owner)


def text_of(page: bytes) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page.decode())))


def test_the_session_index_the_memory_list_and_the_store_page_count_kv_alike(
    viewer_client, memory_sources
) -> None:
    store = chat_store()
    assert "kv: 197 keys (cap 200)" in text_of(viewer_client.get("/?source=araliya").content)
    memory = text_of(viewer_client.get("/memory/").content)
    assert "197 keys (cap 200)" in memory and "of 200 entries" not in memory
    page = text_of(viewer_client.get(f"/memory/{store.key}/").content)
    assert "Key-value store 197 keys (cap 200); araliya evicts the oldest beyond its cap" in page
    assert " entries" not in page.split("Key-value store", 1)[1].split("Key Value", 1)[0]


def test_the_newer_layout_is_counted_by_the_values_kv_get_reads(viewer_client, memory_sources) -> None:
    store = chat_store()
    doc = {"cap": 50, "order": ["a", "b", "gone"], "values": {"a": "1", "b": "2", "late": "3"}}
    Path(store.path).write_text(json.dumps(doc, indent=2))
    catalog.sync_stores()
    assert "kv: 3 keys (cap 50)" in text_of(viewer_client.get("/?source=araliya").content)
    memory = text_of(viewer_client.get("/memory/").content)
    assert "3 keys (cap 50); the order/values layout of araliya after v0.3.0" in memory
    page = text_of(viewer_client.get(f"/memory/{chat_store().key}/").content)
    assert "Key-value store 3 keys (cap 50);" in page
