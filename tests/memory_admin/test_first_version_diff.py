"""A version with nothing before it is offered no diff; a direct link to one still answers plainly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db

UNUSED = (
    "01a200e5-0f28-73fd-a2f0-3121a0683a3a"  # the real session whose kv.json is {"cap": 200, "entries": []}
)


def kv_store() -> MemoryStore:
    return next(s for s in MemoryStore.objects.filter(kind="araliya.kv") if UNUSED in s.owner)


def versions_table(page: str) -> str:
    return page.split("Versions Tapeview has seen or written", 1)[1].split("</table>", 1)[0]


def test_a_store_with_one_version_offers_no_diff(viewer_client, memory_sources) -> None:
    store = kv_store()
    page = viewer_client.get(f"/memory/{store.key}/").content.decode()
    table = versions_table(page)
    assert table.count("<tr") == 2  # the header and the one version
    assert "diff with the one before" not in table and "/diff" not in table
    assert "the first version" in table


def test_a_direct_link_to_the_diff_of_the_only_version_says_there_is_nothing_to_compare(
    viewer_client, memory_sources
) -> None:
    store = kv_store()
    version = store.revisions.get().version
    r = viewer_client.get(f"/memory/{store.key}/diff", {"to": version})
    assert r.status_code == 200
    page = r.content.decode()
    assert "only one version so far" in page and "nothing to compare it with" in page
    assert "(empty)" not in page


def test_only_the_oldest_of_two_versions_has_no_diff(viewer_client, memory_sources) -> None:
    store = kv_store()
    first = store.revisions.get().version
    entry = {"key": "working_memory", "value": "notes", "ts": "2026-11-22T01:35:41Z"}
    Path(store.path).write_text(json.dumps({"cap": 200, "entries": [entry]}, indent=2))
    table = versions_table(viewer_client.get(f"/memory/{store.key}/").content.decode())
    assert table.count("diff with the one before") == 1 and f"?to={first}" not in table
    assert table.count("the first version") == 1

    r = viewer_client.get(f"/memory/{store.key}/diff", {"to": first})
    assert r.status_code == 200
    assert "Nothing comes before this version" in r.content.decode()


def test_the_first_version_of_a_memory_zone_has_no_diff(viewer_client, memory_sources) -> None:
    zone = MemoryStore.objects.filter(kind="bub.zone").first()
    page = viewer_client.get(f"/memory/{zone.key}/").content.decode()
    rows = page.split("<h2>Versions</h2>", 1)[1].split("</table>", 1)[0].split("<tr")[2:]
    assert len(rows) > 1
    assert all("/diff?to=" in row for row in rows[:-1])  # newest first: the last row is v1
    assert "/diff?to=" not in rows[-1] and "the first version" in rows[-1]
