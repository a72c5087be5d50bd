"""U+0000 in a memory file, which PostgreSQL's text cannot hold: the store still reads, keeps its
versions and is searched (the character is kept as U+FFFD by the database only); a text file with one
is shown, not rewritten (test_not_text)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db


def test_a_nul_in_every_family_s_memory_file_never_stops_a_page(operator_client, memory_sources) -> None:
    for store in MemoryStore.objects.all():
        path = Path(store.path)
        if path.suffix in (".md", ".txt"):
            path.write_bytes(path.read_bytes() + b"\nnul\x00here\n")
    for store in MemoryStore.objects.all():
        pages = ("/", "/blame", "/export.md")
        for url in [*(f"/memory/{store.key}{p}" for p in pages), f"/api/memory/{store.key}"]:
            assert operator_client.get(url).status_code == 200, url
    assert operator_client.get("/search/?q=here").status_code == 200
