"""A store exported as it is now, from its page and from the API: Markdown to read, JSON to process."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest

from memory_admin import writes
from memory_admin.models import MemoryStore
from tapeview.accounts.audit import Actor

pytestmark = pytest.mark.django_db


def store(kind: str, title: str | None = None) -> MemoryStore:
    stores = MemoryStore.objects.filter(kind=kind).order_by("owner")
    return stores.get(title=title) if title else stores.first()


def page_version(client, key: str) -> str:
    page = client.get(f"/memory/{key}/").content.decode()
    return re.search(r'<code id="version">([^<]+)</code>', page).group(1)


def test_the_store_page_links_both_exports(viewer_client, memory_sources) -> None:
    memory = store("nanobot.memory")
    page = viewer_client.get(f"/memory/{memory.key}/").content.decode()
    assert f'href="/memory/{memory.key}/export.md" download>Markdown</a>' in page
    assert f'href="/memory/{memory.key}/export.json" download>JSON</a>' in page


def test_a_zone_exports_its_long_term_text_and_notes_by_date(viewer_client, memory_sources) -> None:
    zone = store("bub.zone")
    writes.zone_write(zone, Actor("test"), "restore", "8", version=5)
    r = viewer_client.get(f"/memory/{zone.key}/export.md")
    md = r.content.decode()
    assert r.status_code == 200 and r["Content-Type"] == "text/markdown; charset=utf-8"
    assert r["Content-Disposition"].startswith("attachment; filename=") and '.md"' in r["Content-Disposition"]
    assert md.startswith("# memory zone\n") and "- Version: 9\n" in md
    assert "## Long-term memory\n\nI prefer Python 3.12 and always want type hints.\n" in md
    assert "### 2026-11-22\n\nRefactored tape store; fixed reset bug.\n" in md
    assert md.index("### 2026-11-22") < md.index("### 2026-11-21") < md.index("### 2026-10-08")
    doc = viewer_client.get(f"/memory/{zone.key}/export.json").json()
    assert (doc["id"], doc["kind"], doc["version"]) == (zone.key, "bub.zone", "9")
    assert doc["content"]["long_term"] == "I prefer Python 3.12 and always want type hints."
    assert list(doc["content"]["daily"]) == ["2026-11-22", "2026-11-21", "2026-10-08"]
    assert datetime.fromisoformat(doc["date"]).year == 2026


def test_a_text_file_exports_as_it_is(viewer_client, memory_sources) -> None:
    memory = store("nanobot.memory")
    text = Path(memory.path).read_text()
    md = viewer_client.get(f"/memory/{memory.key}/export.md").content.decode()
    assert md.startswith("# MEMORY.md\n") and text.rstrip("\n") in md
    doc = viewer_client.get(f"/memory/{memory.key}/export.json").json()
    assert doc["content"] == {"text": text}
    assert doc["version"] == page_version(viewer_client, memory.key)


def test_kv_pairs_export_as_a_list_and_as_pairs(viewer_client, memory_sources) -> None:
    kv = store("araliya.kv")
    doc = viewer_client.get(f"/memory/{kv.key}/export.json").json()
    pairs = doc["content"]["pairs"]
    assert {"key": "user_name", "value": "sachi"} in pairs
    md = viewer_client.get(f"/memory/{kv.key}/export.md").content.decode()
    assert f"## Key-value pairs ({len(pairs)})" in md and "\n- `user_name`: sachi\n" in md
    # A value's further lines stay inside its item.
    assert "- `working_memory`: # Working memory\n\n  - user: Sachi (prefers short answers)\n" in md


def test_yachiyo_entries_export_with_their_keywords(viewer_client, memory_sources) -> None:
    memory = store("yachiyo.memory")
    doc = viewer_client.get(f"/memory/{memory.key}/export.json").json()
    blue = next(e for e in doc["content"]["entries"] if e["content"] == "user favorite color is blue")
    assert blue["keywords"] == ["favorite", "color", "blue"] and blue["id"].startswith("mem-")
    md = viewer_client.get(f"/memory/{memory.key}/export.md").content.decode()
    assert "- user favorite color is blue\n  _keywords: favorite, color, blue · updated " in md
    assert "- Line 1 of a multi-line fact\n  Line 2 continues the same fact\n\n  Paragraph 2" in md


def test_the_export_shows_a_write_made_a_moment_before(operator_client, memory_sources) -> None:
    memory = store("nanobot.file", "USER.md")
    version = page_version(operator_client, memory.key)
    operator_client.post(
        f"/memory/{memory.key}/edit", {"text": "Timezone: Europe/Berlin\n", "base_version": version}
    )
    doc = operator_client.get(f"/memory/{memory.key}/export.json").json()
    assert doc["content"]["text"] == "Timezone: Europe/Berlin\n"
    assert doc["version"] == page_version(operator_client, memory.key) != version


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_the_api_export_is_the_pages_export(reader, viewer_client, memory_sources, fmt) -> None:
    for memory in (store("bub.zone"), store("yachiyo.memory"), store("nanobot.history")):
        api = reader.get(f"/api/memory/{memory.key}/export", format=fmt)
        page = viewer_client.get(f"/memory/{memory.key}/export.{fmt}")
        assert api.status_code == 200 and api["Content-Type"] == page["Content-Type"]
        assert api["Content-Disposition"] == page["Content-Disposition"]
        assert api.content == page.content


def test_the_api_export_defaults_to_json_and_refuses_other_formats(reader, memory_sources) -> None:
    memory = store("nanobot.history")
    doc = reader.get(f"/api/memory/{memory.key}/export").json()
    assert doc["kind"] == "nanobot.history" and doc["content"]["history"]
    assert {"cursor", "timestamp", "content"} <= set(doc["content"]["history"][0])
    assert reader.get(f"/api/memory/{memory.key}/export", format="pdf").status_code == 422
    assert reader.get("/api/memory/0000000000000000/export").status_code == 404


def test_an_unknown_page_format_or_store_is_404(viewer_client, memory_sources) -> None:
    memory = store("nanobot.memory")
    assert viewer_client.get(f"/memory/{memory.key}/export.pdf").status_code == 404
    assert viewer_client.get("/memory/0000000000000000/export.md").status_code == 404


def test_an_unreadable_store_cannot_be_exported_and_says_why(reader, viewer_client, memory_sources) -> None:
    kv = store("araliya.kv")
    Path(kv.path).write_bytes(b'{"cap": 200, "entries": [')
    r = viewer_client.get(f"/memory/{kv.key}/export.md")
    assert r.status_code == 400 and "kv.json cannot be read now" in r.content.decode()
    api = reader.get(f"/api/memory/{kv.key}/export", format="json")
    assert api.status_code == 400 and list(api.json()) == ["detail"]
