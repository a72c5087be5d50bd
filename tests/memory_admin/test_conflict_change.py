"""A conflict of a write that is not a text edit (a note, an entry, a key, a prune, a restore) shows
the user's own change in words, with its values and the entry's or key's value now, before it is
made again on top of the newer version."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db


def store(kind: str) -> MemoryStore:
    return MemoryStore.objects.filter(kind=kind).order_by("owner").first()


def version_of(client, key: str) -> str:
    page = client.get(f"/memory/{key}/").content.decode()
    return re.search(r'<code id="version">([^<]+)</code>', page).group(1)


def shown(page: str, part: str) -> str:
    """The text of the page's element with id `part`, as the user reads it."""
    found = re.search(rf'<(\w+) [^>]*id="{part}"[^>]*>(.*?)</\1>', page, re.S)
    assert found, f"the conflict page has no #{part}"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(2))).split())


def stale_zone_write(client, sent: dict) -> str:
    """Another tab saves the long-term text on v8; this one then makes `sent` on the stale v8."""
    key = store("bub.zone").key
    client.post(f"/memory/{key}/zone", {"action": "long_term", "text": "Tab two.", "base_version": "8"})
    r = client.post(f"/memory/{key}/zone", {**sent, "base_version": "8"})
    assert r.status_code == 409
    return r.content.decode()


def stale_daily_note(client, text: str) -> str:
    """This tab appends to today's note (v9), another clears the memory (v10): an append made on the
    stale v9 clashes (its note is gone; an append that only follows newer lines is no conflict)."""
    key = store("bub.zone").key
    client.post(f"/memory/{key}/zone", {"action": "daily", "text": "Morning note.", "base_version": "8"})
    client.post(f"/memory/{key}/zone", {"action": "clear", "base_version": "9", "confirmed": "on"})
    r = client.post(f"/memory/{key}/zone", {"action": "daily", "text": text, "base_version": "9"})
    assert r.status_code == 409
    return r.content.decode()


def test_a_stale_daily_note_shows_the_note_i_wrote(operator_client, memory_sources) -> None:
    page = stale_daily_note(operator_client, "Late note about tea.")

    assert shown(page, "your-change") == "Your change: append to today's note:"
    assert shown(page, "your-value") == "Late note about tea."
    assert "Make my change again on top of version 10" in page


def test_a_conflict_names_the_other_write_in_words_not_its_audit_name(
    operator_client, memory_sources
) -> None:
    page = stale_zone_write(operator_client, {"action": "clear", "confirmed": "on"})

    assert "(saved the long-term memory)" in page
    assert "(zone." not in page


@pytest.mark.parametrize(
    ("sent", "words"),
    [
        ({"action": "clear", "confirmed": "on"}, "Your change: clear all memory"),
        ({"action": "restore", "version": "5", "confirmed": "on"}, "Your change: restore version 5"),
    ],
)
def test_a_stale_zone_write_says_what_it_was(operator_client, memory_sources, sent, words) -> None:
    page = stale_zone_write(operator_client, sent)

    assert shown(page, "your-change").startswith(words)


def test_a_stale_prune_names_the_notes_it_removes_from_the_newer_version(
    operator_client, memory_sources
) -> None:
    key = store("bub.zone").key
    sent = {"action": "restore", "version": "5", "base_version": "8", "confirmed": "on"}
    operator_client.post(f"/memory/{key}/zone", sent)  # another tab: v9 holds a note of 2026-10-08
    sent = {"action": "prune", "days": "30", "base_version": "8", "confirmed": "on"}

    page = operator_client.post(f"/memory/{key}/zone", sent).content.decode()

    words = shown(page, "your-change")
    assert words.startswith("Your change: remove the daily notes older than 30 days (in version 9: ")
    assert "2026-10-08" in words


def test_a_stale_restore_shows_what_it_would_change_on_the_newer_version(
    operator_client, memory_sources
) -> None:
    page = stale_zone_write(operator_client, {"action": "restore", "version": "5", "confirmed": "on"})

    assert "Tab two." in shown(page, "your-changes")  # the restore takes the newer text away


def test_a_stale_kv_set_shows_the_keys_value_now_beside_mine(operator_client, memory_sources) -> None:
    kv = store("araliya.kv")
    base = version_of(operator_client, kv.key)
    sent = {"action": "set", "key": "mood", "base_version": base}
    operator_client.post(f"/memory/{kv.key}/kv", {**sent, "value": "sunny"})
    before = Path(kv.path).read_bytes()

    r = operator_client.post(f"/memory/{kv.key}/kv", {**sent, "value": "rainy"})
    page = r.content.decode()

    assert r.status_code == 409 and Path(kv.path).read_bytes() == before
    assert shown(page, "your-change") == "Your change: set the key 'mood' to:"
    assert shown(page, "now-value") == "sunny"
    assert shown(page, "your-value") == "rainy"


def test_a_stale_entry_edit_shows_the_entrys_content_now_beside_mine(operator_client, memory_sources) -> None:
    memory = store("yachiyo.memory")
    page = operator_client.get(f"/memory/{memory.key}/").content.decode()
    entry_id = re.search(r'<tr id="entry-([^"]+)">', page).group(1)
    sent = {"action": "edit", "entry_id": entry_id, "base_version": version_of(operator_client, memory.key)}
    operator_client.post(
        f"/memory/{memory.key}/entries", {**sent, "content": "The agent's newer fact", "keywords": "a"}
    )

    r = operator_client.post(
        f"/memory/{memory.key}/entries", {**sent, "content": "My fact", "keywords": "b, c"}
    )
    page = r.content.decode()

    assert r.status_code == 409
    assert shown(page, "your-change") == f"Your change: change the entry {entry_id} to:"
    assert shown(page, "your-value") == "My fact (keywords: b, c)"
    assert shown(page, "now-value") == "The agent's newer fact (keywords: a)"


def test_a_stale_entry_add_shows_the_entry_i_wrote(operator_client, memory_sources) -> None:
    memory = store("yachiyo.memory")
    sent = {"action": "add", "keywords": "ui", "base_version": version_of(operator_client, memory.key)}
    operator_client.post(f"/memory/{memory.key}/entries", {**sent, "content": "Other tab's entry"})

    page = operator_client.post(f"/memory/{memory.key}/entries", {**sent, "content": "Prefers dark mode"})

    assert shown(page.content.decode(), "your-change") == "Your change: add an entry:"
    assert shown(page.content.decode(), "your-value") == "Prefers dark mode (keywords: ui)"


def test_making_a_shown_kv_change_again_still_writes_it_on_top(operator_client, memory_sources) -> None:
    kv = store("araliya.kv")
    sent = {"action": "set", "base_version": version_of(operator_client, kv.key)}
    operator_client.post(f"/memory/{kv.key}/kv", {**sent, "key": "mood", "value": "sunny"})
    page = operator_client.post(
        f"/memory/{kv.key}/kv", {**sent, "key": "tea", "value": "green"}
    ).content.decode()

    form = re.search(
        r'<form method="post" action="([^"]+)" class="editor" id="resolve">(.*?)</form>', page, re.S
    )
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form.group(2)))
    assert operator_client.post(form.group(1), fields).status_code == 302

    now = operator_client.get(f"/memory/{kv.key}/").content.decode()
    assert "sunny" in now and "green" in now
