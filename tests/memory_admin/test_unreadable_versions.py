"""A store whose file cannot be read now still lists the versions Tapeview kept, and each link of that list
leads to a page that answers: a diff for every version but the first, which says it is the first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db

UNUSED = (
    "01a200e5-0f28-73fd-a2f0-3121a0683a3a"  # the real session whose kv.json is {"cap": 200, "entries": []}
)


@pytest.fixture
def broken_kv(viewer_client, memory_sources) -> MemoryStore:
    """An araliya kv.json Tapeview saw twice (empty, then with one key), now cut off mid-write."""
    store = next(s for s in MemoryStore.objects.filter(kind="araliya.kv") if UNUSED in s.owner)
    entry = {"key": "working_memory", "value": "notes", "ts": "2026-11-22T01:35:41Z"}
    Path(store.path).write_text(json.dumps({"cap": 200, "entries": [entry]}, indent=2))
    viewer_client.get(f"/memory/{store.key}/")
    Path(store.path).write_bytes(b'{"cap": 200, "entries": [')
    return store


def versions_table(page: str) -> str:
    return page.split("Versions Tapeview has seen or written", 1)[1].split("</table>", 1)[0]


def test_an_unreadable_store_offers_no_diff_for_its_first_kept_version(viewer_client, broken_kv) -> None:
    page = viewer_client.get(f"/memory/{broken_kv.key}/").content.decode()
    assert "This store cannot be read now" in page
    rows = versions_table(page).split("<tr")[2:]
    assert len(rows) == 2
    assert "diff with the one before" in rows[0] and "the first version" not in rows[0]
    assert "/diff" not in rows[1] and "the first version" in rows[1]
    assert f'href="/memory/{broken_kv.key}/diff">Compare versions</a>' in page


def test_every_link_of_an_unreadable_stores_versions_answers(viewer_client, broken_kv) -> None:
    page = viewer_client.get(f"/memory/{broken_kv.key}/").content.decode()
    links = re.findall(r'href="(/memory/[^"]+/diff[^"]*)"', page)
    assert len(links) == 2  # Compare versions, and the newer version's diff
    diff = viewer_client.get(links[1].replace("&amp;", "&"))
    assert diff.status_code == 200 and "working_memory" in diff.content.decode()
    compare = viewer_client.get(links[0])
    assert compare.status_code == 400 and "Pick two of the versions Tapeview kept" in compare.content.decode()
