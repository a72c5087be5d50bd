"""After a write the store page says what was done and which version it made, and its header is fresh."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from tapeview.accounts.models import AuditEvent

pytestmark = pytest.mark.django_db


def store(kind: str, title: str | None = None) -> MemoryStore:
    stores = MemoryStore.objects.filter(kind=kind).order_by("owner")
    return stores.get(title=title) if title else stores.first()


def messages(response) -> list[str]:
    found = re.search(r'<ul class="messages">(.*?)</ul>', response.content.decode(), re.S)
    return [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", found.group(1))] if found else []


def header(client, key: str) -> dict[str, str]:
    page = client.get(f"/memory/{key}/").content.decode()
    return {
        "version": re.search(r'<code id="version">([^<]+)</code>', page).group(1),
        "bytes": re.search(r'<dd id="size" title="(\d+) bytes">', page).group(1),
        "changed": re.search(r'<dd id="changed"><time datetime="([^"]+)"', page).group(1),
    }


def test_an_edit_says_saved_as_its_version_and_the_header_shows_the_file_written(
    operator_client, memory_sources
) -> None:
    memory = store("nanobot.file", "USER.md")
    path = Path(memory.path)
    before = header(operator_client, memory.key)
    text = path.read_text() + "\n- Prefers metric units, and a much longer line to change the size.\n"
    r = operator_client.post(
        f"/memory/{memory.key}/edit", {"text": text, "base_version": before["version"]}, follow=True
    )
    after = header(operator_client, memory.key)
    assert after["version"] != before["version"]
    assert messages(r) == [f"Saved as version {after['version']}."]
    assert after["bytes"] == str(path.stat().st_size) != before["bytes"]
    assert after["changed"] != before["changed"]


def test_the_header_follows_a_change_the_agent_made_on_the_next_reload(
    operator_client, memory_sources
) -> None:
    memory = store("nanobot.memory")
    path = Path(memory.path)
    before = header(operator_client, memory.key)
    path.write_text(path.read_text() + "\n- Added by Dream.\n")
    os.utime(path, (1_900_000_000, 1_900_000_000))
    after = header(operator_client, memory.key)
    assert after["bytes"] == str(path.stat().st_size) != before["bytes"]
    assert after["changed"].startswith("2030-03-17T17:46:40")
    assert MemoryStore.objects.get(pk=memory.pk).size == path.stat().st_size


def test_saving_the_same_text_says_nothing_changed(operator_client, memory_sources) -> None:
    memory = store("nanobot.file", "USER.md")
    version = header(operator_client, memory.key)["version"]
    r = operator_client.post(
        f"/memory/{memory.key}/edit",
        {"text": Path(memory.path).read_text(), "base_version": version},
        follow=True,
    )
    assert messages(r) == [f"Nothing changed: the store is still at version {version}."]


def test_the_message_is_shown_once(operator_client, memory_sources) -> None:
    memory = store("nanobot.file", "USER.md")
    version = header(operator_client, memory.key)["version"]
    r = operator_client.post(
        f"/memory/{memory.key}/edit", {"text": "short\n", "base_version": version}, follow=True
    )
    assert messages(r)
    assert messages(operator_client.get(f"/memory/{memory.key}/")) == []


def test_a_stale_edit_gets_no_saved_message(operator_client, memory_sources) -> None:
    memory = store("nanobot.memory")
    r = operator_client.post(f"/memory/{memory.key}/edit", {"text": "mine\n", "base_version": "0" * 16})
    assert r.status_code == 409
    assert messages(operator_client.get(f"/memory/{memory.key}/")) == []


def test_restoring_a_kept_version_asks_first_then_says_what_it_did(operator_client, memory_sources) -> None:
    memory = store("nanobot.file", "USER.md")
    path = Path(memory.path)
    original = path.read_text()
    first = header(operator_client, memory.key)["version"]
    operator_client.post(f"/memory/{memory.key}/edit", {"text": "replaced\n", "base_version": first})
    current = header(operator_client, memory.key)["version"]
    sent = {"version": first, "base_version": current}
    asked = operator_client.post(f"/memory/{memory.key}/restore", sent)
    assert "Restore version" in asked.content.decode() and path.read_text() == "replaced\n"
    r = operator_client.post(f"/memory/{memory.key}/restore", {**sent, "confirmed": "on"}, follow=True)
    assert path.read_text() == original
    assert messages(r) == [f"Restored version {first}: the file holds version {first} again."]


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"action": "long_term", "text": "Likes tea."}, "Saved the long-term memory: saved as version 9."),
        ({"action": "daily", "text": "Tea at four."}, "Added to today's note: saved as version 9."),
        ({"action": "clear", "confirmed": "on"}, "Cleared the memory: saved as version 9."),
        ({"action": "restore", "version": "5", "confirmed": "on"}, "Restored version 5: saved as version 9."),
    ],
)
def test_each_zone_write_names_what_it_did_and_its_version(
    operator_client, memory_sources, data, said
) -> None:
    zone = store("bub.zone")
    r = operator_client.post(f"/memory/{zone.key}/zone", {**data, "base_version": "8"}, follow=True)
    assert messages(r) == [said]
    assert header(operator_client, zone.key)["version"] == "9"


def test_a_prune_asks_naming_the_notes_then_says_how_many_went(operator_client, memory_sources) -> None:
    zone = store("bub.zone")
    operator_client.post(
        f"/memory/{zone.key}/zone",
        {"action": "restore", "version": "5", "base_version": "8", "confirmed": "on"},
    )
    path = Path(zone.path)
    before = path.read_bytes()
    sent = {"action": "prune", "days": "30", "base_version": "9"}
    asked = operator_client.post(f"/memory/{zone.key}/zone", sent)
    question = html.unescape(re.search(r'<h1 id="question">(.*?)</h1>', asked.content.decode()).group(1))
    assert question.startswith("Prune 1 daily note older than 30 days (2026-10-08)?")
    assert path.read_bytes() == before
    r = operator_client.post(f"/memory/{zone.key}/zone", {**sent, "confirmed": "on"}, follow=True)
    assert messages(r) == ["Pruned 1 daily note: saved as version 10."]
    assert "<h3>2026-10-08</h3>" not in r.content.decode() and "<h3>2026-11-21</h3>" in r.content.decode()


def test_a_prune_with_nothing_to_remove_writes_nothing_and_says_so(operator_client, memory_sources) -> None:
    zone = store("bub.zone")
    before = Path(zone.path).read_bytes()
    r = operator_client.post(
        f"/memory/{zone.key}/zone", {"action": "prune", "days": "30", "base_version": "8"}, follow=True
    )
    assert messages(r) == ["No daily note is older than 30 days: nothing was written."]
    assert Path(zone.path).read_bytes() == before and not AuditEvent.objects.exists()


def test_kv_writes_name_the_key_and_the_version(operator_client, memory_sources) -> None:
    kv = store("araliya.kv")
    version = header(operator_client, kv.key)["version"]
    r = operator_client.post(
        f"/memory/{kv.key}/kv",
        {"action": "set", "key": "mood", "value": "sunny", "base_version": version},
        follow=True,
    )
    version = header(operator_client, kv.key)["version"]
    assert messages(r) == [f"Set the key 'mood': saved as version {version}."]
    r = operator_client.post(
        f"/memory/{kv.key}/kv",
        {"action": "delete", "key": "mood", "base_version": version, "confirmed": "on"},
        follow=True,
    )
    assert messages(r) == [
        f"Deleted the key 'mood': saved as version {header(operator_client, kv.key)['version']}."
    ]


def test_a_yachiyo_entry_is_deleted_only_when_confirmed_and_says_so(operator_client, memory_sources) -> None:
    memory = store("yachiyo.memory")
    page = operator_client.get(f"/memory/{memory.key}/").content.decode()
    entry_id = re.search(r'<tr id="entry-([^"]+)">', page).group(1)
    version = header(operator_client, memory.key)["version"]
    sent = {"action": "delete", "entry_id": entry_id, "base_version": version}
    before = Path(memory.path).read_bytes()
    asked = operator_client.post(f"/memory/{memory.key}/entries", sent)
    assert f"Delete the memory entry {entry_id}?" in asked.content.decode()
    assert Path(memory.path).read_bytes() == before
    r = operator_client.post(f"/memory/{memory.key}/entries", {**sent, "confirmed": "on"}, follow=True)
    assert messages(r) == [
        f"Deleted an entry: saved as version {header(operator_client, memory.key)['version']}."
    ]
    assert f'id="entry-{entry_id}"' not in r.content.decode()


def test_adding_a_yachiyo_entry_says_saved_as(operator_client, memory_sources) -> None:
    memory = store("yachiyo.memory")
    version = header(operator_client, memory.key)["version"]
    r = operator_client.post(
        f"/memory/{memory.key}/entries",
        {"action": "add", "content": "Prefers dark mode", "keywords": "ui", "base_version": version},
        follow=True,
    )
    assert messages(r) == [
        f"Added an entry: saved as version {header(operator_client, memory.key)['version']}."
    ]


def test_every_destructive_button_on_the_pages_leads_to_the_confirm_page(
    operator_client, memory_sources
) -> None:
    """The forms the pages render, posted as a click sends them: each asks before it writes."""
    zone = store("bub.zone")
    operator_client.post(
        f"/memory/{zone.key}/zone",
        {"action": "restore", "version": "5", "base_version": "8", "confirmed": "on"},
    )
    kv = store("araliya.kv")
    operator_client.post(
        f"/memory/{kv.key}/kv",
        {
            "action": "set",
            "key": "mood",
            "value": "sunny",
            "base_version": header(operator_client, kv.key)["version"],
        },
    )
    memory = store("nanobot.file", "USER.md")
    operator_client.post(
        f"/memory/{memory.key}/edit",
        {"text": "x\n", "base_version": header(operator_client, memory.key)["version"]},
    )
    pages = {
        zone.key: f"/memory/{zone.key}/?days=30",
        kv.key: f"/memory/{kv.key}/",
        store("yachiyo.memory").key: f"/memory/{store('yachiyo.memory').key}/",
        memory.key: f"/memory/{memory.key}/",
    }
    destructive = re.compile(r"Delete|Restore|Prune|Clear")
    asked = 0
    for key, url in pages.items():
        page = operator_client.get(url).content.decode()
        for form in re.findall(r'<form method="post" action="([^"]+)"[^>]*>(.*?)</form>', page, re.S):
            action, body = form
            if not destructive.search(re.search(r"<button[^>]*>(.*?)</button>", body).group(1)):
                continue
            fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', body))
            before = Path(MemoryStore.objects.get(key=key).path).read_bytes()
            r = operator_client.post(html.unescape(action), {k: html.unescape(v) for k, v in fields.items()})
            assert r.status_code == 200 and 'id="question"' in r.content.decode(), (action, fields)
            assert Path(MemoryStore.objects.get(key=key).path).read_bytes() == before
            asked += 1
    assert asked >= 6  # restore (zone, file), prune, clear, kv delete, entry delete


def test_the_versions_api_gives_each_version_its_date_and_the_pages_summary(
    reader, operator_client, memory_sources
) -> None:
    zone = store("bub.zone")
    operator_client.post(
        f"/memory/{zone.key}/zone",
        {"action": "restore", "version": "5", "base_version": "8", "confirmed": "on"},
    )
    items = reader.get(f"/api/memory/{zone.key}/versions").json()["items"]
    page = operator_client.get(f"/memory/{zone.key}/").content.decode()
    shown = dict(
        re.findall(
            r"<tr[^>]*><td>v(\d+)</td><td>(?:<time[^>]*>[^<]*</time>|<span[^>]*>[^<]*</span>)</td><td>([^<]*)</td>",
            page,
        )
    )
    assert items[0]["version"] == "9" and items[0]["label"] == "v9"
    assert {i["version"]: i["summary"] for i in items} == {v: html.unescape(s) for v, s in shown.items()}
    assert items[0]["date"] and items[0]["date"][:4] == "2026"
    memory = store("nanobot.file", "USER.md")
    version = header(operator_client, memory.key)["version"]
    operator_client.post(f"/memory/{memory.key}/edit", {"text": "x\n", "base_version": version})
    kept = reader.get(f"/api/memory/{memory.key}/versions").json()["items"]
    assert [(i["summary"], bool(i["date"])) for i in kept] == [
        ("written through Tapeview", True),
        ("seen on disk", True),
    ]
    assert "written through Tapeview" in operator_client.get(f"/memory/{memory.key}/").content.decode()
