"""A memory page that finds nothing says so in the user's words, never Django's model name."""

from __future__ import annotations

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("page", ["", "edit", "diff", "blame", "export.md"])
def test_an_unknown_store_page_says_no_such_memory_store(operator_client, memory_sources, page) -> None:
    r = operator_client.get(f"/memory/nope/{page}")
    assert r.status_code == 404
    html = r.content.decode()
    assert "no such memory store" in html
    assert "MemoryStore" not in html and "matches the given query" not in html


@pytest.mark.parametrize("action", ["zone", "entries", "kv"])
def test_a_write_to_a_store_of_another_kind_says_no_such_memory_store(
    operator_client, memory_sources, action
) -> None:
    nanobot = MemoryStore.objects.filter(kind__startswith="nanobot").first()
    r = operator_client.post(f"/memory/{nanobot.key}/{action}", {"action": "set"})
    assert r.status_code == 404
    assert "no such memory store" in r.content.decode()


def test_the_zone_of_an_unknown_tape_says_no_such_tape(viewer_client, memory_sources) -> None:
    r = viewer_client.get("/memory/tapes/nope/")
    assert r.status_code == 404
    assert "no such tape" in r.content.decode() and "Tape matches" not in r.content.decode()
