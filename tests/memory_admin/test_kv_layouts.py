"""araliya's newer kv.json layout (`order` + `values`, formats/araliya.md B.7) read as araliya reads
it: string values are a session it uses, any other value one it calls malformed (B.3)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db

KEYS = [f"k{i}" for i in range(10_000)]


def kv_json(values: dict) -> MemoryStore:
    store = MemoryStore.objects.filter(kind="araliya.kv").first()
    Path(store.path).write_text(json.dumps({"cap": 20_000, "order": [*KEYS, "missing"], "values": values}))
    return store


def test_ten_thousand_string_values_in_the_newer_layout_are_shown(viewer_client, memory_sources) -> None:
    store = kv_json({k: f"value of {k}" for k in KEYS})

    r = viewer_client.get(f"/memory/{store.key}/")
    got = viewer_client.get(f"/api/memory/{store.key}").json()

    page = html.unescape(r.content.decode())
    assert r.status_code == 200 and "malformed" not in page
    assert "value of k0" in page and "value of k9999" in page
    assert got["content"].count("\n") == 10_000


def test_values_that_are_not_strings_are_malformed_as_araliya_says(viewer_client, memory_sources) -> None:
    store = kv_json(
        {k: (i if i % 3 == 0 else [i] if i % 3 == 1 else {"v": None}) for i, k in enumerate(KEYS)}
    )

    r = viewer_client.get(f"/memory/{store.key}/")

    assert "kv.json is malformed: araliya itself cannot use this session" in html.unescape(r.content.decode())
