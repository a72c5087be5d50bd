"""The memory pages as viewers and operators use them: every write conditional, audited, undoable."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from tapeview.accounts.models import AuditEvent
from tapeview.sources import bub

pytestmark = pytest.mark.django_db


def store(kind: str, title: str | None = None) -> MemoryStore:
    stores = MemoryStore.objects.filter(kind=kind)
    return stores.get(title=title) if title else stores.first()


def test_memory_index_lists_every_family(viewer_client, memory_sources) -> None:
    page = viewer_client.get("/memory/").content.decode()
    for kind in ("bub.zone", "nanobot.memory", "nanobot.history", "yachiyo.memory", "araliya.kv"):
        assert f"<td>{kind}</td>" in page
    assert "USER.md" in page and "SOUL.md" in page and "kv.json" in page


def test_viewers_read_memory_but_cannot_write(viewer_client, memory_sources) -> None:
    memory = store("nanobot.memory")
    page = viewer_client.get(f"/memory/{memory.key}/").content.decode()
    assert "Long-term Memory" in page and ">Edit</a>" not in page
    before = Path(memory.path).read_bytes()
    r = viewer_client.post(f"/memory/{memory.key}/edit", {"text": "x", "base_version": "whatever"})
    assert r.status_code == 403 and Path(memory.path).read_bytes() == before
    zone = store("bub.zone")
    assert (
        viewer_client.post(
            f"/memory/{zone.key}/zone", {"action": "clear", "base_version": "8", "confirmed": "on"}
        ).status_code
        == 403
    )


def test_an_edit_is_written_atomically_recorded_and_audited(operator_client, memory_sources) -> None:
    memory = store("nanobot.memory")
    path = Path(memory.path)
    mode = path.stat().st_mode
    page = operator_client.get(f"/memory/{memory.key}/edit").content.decode()
    base = re.search(r'name="base_version" value="(\w+)"', page).group(1)
    new_text = path.read_text() + "\n- Prefers metric units.\n"
    r = operator_client.post(f"/memory/{memory.key}/edit", {"text": new_text, "base_version": base})
    assert r.status_code == 302
    assert path.read_text() == new_text and path.stat().st_mode == mode
    event = AuditEvent.objects.get(subject=f"store:{memory.key}")
    assert (event.actor, event.action, event.before) == ("olga", "edit", base)
    assert "+- Prefers metric units." in event.diff
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_stale_edit_gets_409_with_both_versions_writes_nothing_and_is_audited_as_refused(
    operator_client, memory_sources
) -> None:
    memory = store("nanobot.memory")
    path = Path(memory.path)
    page = operator_client.get(f"/memory/{memory.key}/edit").content.decode()
    base = re.search(r'name="base_version" value="(\w+)"', page).group(1)
    path.write_text(path.read_text() + "\n- Added by Dream meanwhile.\n")  # the agent consolidates
    agents = path.read_bytes()
    r = operator_client.post(f"/memory/{memory.key}/edit", {"text": "my version\n", "base_version": base})
    page = r.content.decode()
    assert r.status_code == 409 and path.read_bytes() == agents
    assert "The agent changed MEMORY.md while you were editing" in page
    assert "Added by Dream meanwhile." in page and "my version" in page
    refused = AuditEvent.objects.get()
    assert (refused.actor, refused.action, refused.subject) == ("olga", "edit", f"store:{memory.key}")
    assert refused.outcome_text.startswith("refused: a conflict: the file changed since its editor read it")


def test_restore_gives_back_the_exact_earlier_text(operator_client, memory_sources) -> None:
    memory = store("nanobot.file", "USER.md")
    path = Path(memory.path)
    original = path.read_text()
    operator_client.get(f"/memory/{memory.key}/")  # Tapeview sees (and keeps) this version
    first = re.search(
        r'<code id="version">(\w+)</code>', operator_client.get(f"/memory/{memory.key}/").content.decode()
    )
    operator_client.post(f"/memory/{memory.key}/edit", {"text": "replaced\n", "base_version": first.group(1)})
    assert path.read_text() == "replaced\n"
    current = re.search(
        r'<code id="version">(\w+)</code>', operator_client.get(f"/memory/{memory.key}/").content.decode()
    )
    r = operator_client.post(
        f"/memory/{memory.key}/restore",
        {"version": first.group(1), "base_version": current.group(1), "confirmed": "on"},
    )
    assert r.status_code == 302 and path.read_text() == original
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["restore", "edit"]


def test_the_diff_page_marks_what_changed(operator_client, memory_sources) -> None:
    memory = store("nanobot.file", "USER.md")
    base = re.search(
        r'<code id="version">(\w+)</code>', operator_client.get(f"/memory/{memory.key}/").content.decode()
    )
    text = Path(memory.path).read_text()
    operator_client.post(
        f"/memory/{memory.key}/edit",
        {"text": text + "Timezone: Europe/Berlin\n", "base_version": base.group(1)},
    )
    page = operator_client.get(f"/memory/{memory.key}/diff").content.decode()
    assert '<tr class="add">' in page and "Timezone: Europe/Berlin" in page


def test_markdown_preview_renders_without_raw_html(operator_client, memory_sources) -> None:
    memory = store("nanobot.memory")
    r = operator_client.post(
        f"/memory/{memory.key}/preview", {"text": "# Title\n\n<script>x</script> **bold**"}
    )
    html = r.content.decode()
    assert "<h2>Title</h2>" in html and "<strong>bold</strong>" in html and "<script>" not in html


def test_history_is_newest_first_searchable_with_dreams_progress(viewer_client, memory_sources) -> None:
    history = store("nanobot.history")
    page = viewer_client.get(f"/memory/{history.key}/").content.decode()
    cursors = [int(c) for c in re.findall(r'<span class="sub">#(\d+) ·', page)]
    assert cursors and cursors == sorted(cursors, reverse=True)
    assert 'id="dream-progress"' in page
    searched = viewer_client.get(f"/memory/{history.key}/?q=zzzz-not-there").content.decode()
    assert "nothing matches" in searched


def zone_version(client, key: str) -> str:
    return re.search(
        r'<code id="version">(\w+)</code>', client.get(f"/memory/{key}/").content.decode()
    ).group(1)


def test_zone_edit_appends_one_new_version_and_warns_about_the_context(
    operator_client, memory_sources
) -> None:
    zone = store("bub.zone")
    page = operator_client.get(f"/memory/{zone.key}/").content.decode()
    assert (
        "the agent&#x27;s next context starts after it" in page
        or "the agent's next context starts after it" in page
    )
    path = Path(zone.path)
    before = path.read_bytes()
    r = operator_client.post(
        f"/memory/{zone.key}/zone", {"action": "long_term", "text": "Likes tea.", "base_version": "8"}
    )
    assert r.status_code == 302
    data = path.read_bytes()
    assert data.startswith(before)
    new = list(bub.scan(path))[-3:]
    assert [e.name for e in new] == ["memory/open", "memory.long_term", "memory/seal"]
    assert new[0].payload["state"] == {"version": 9} and new[1].payload["data"]["content"] == "Likes tea."
    assert zone_version(operator_client, zone.key) == "9"
    assert AuditEvent.objects.get().action == "zone.long_term"


def test_a_busy_tape_gets_a_retry_hint_and_nothing_is_written(
    operator_client, memory_sources, settings
) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 3600  # the file just changed: the agent may be mid-turn
    zone = store("bub.zone")
    path = Path(zone.path)
    os.utime(path)
    before = path.read_bytes()
    r = operator_client.post(
        f"/memory/{zone.key}/zone", {"action": "clear", "base_version": "8", "confirmed": "on"}
    )
    assert r.status_code == 409 and int(r["Retry-After"]) >= 1
    assert "try again" in r.content.decode() and path.read_bytes() == before


def test_prune_preview_lists_exactly_what_prune_removes(operator_client, memory_sources) -> None:
    zone = store("bub.zone")
    operator_client.post(
        f"/memory/{zone.key}/zone",
        {"action": "restore", "version": "5", "base_version": "8", "confirmed": "on"},
    )
    page = operator_client.get(f"/memory/{zone.key}/?days=30").content.decode()
    listed = re.findall(
        r"<li>(\d{4}-\d\d-\d\d)</li>", re.search(r'<ul id="prune-preview">.*?</ul>', page, re.S).group(0)
    )
    before = set(re.findall(r"<h3>(\d{4}-\d\d-\d\d)</h3>", page))
    version = zone_version(operator_client, zone.key)
    operator_client.post(
        f"/memory/{zone.key}/zone",
        {"action": "prune", "days": "30", "base_version": version, "confirmed": "on"},
    )
    after = set(
        re.findall(
            r"<h3>(\d{4}-\d\d-\d\d)</h3>", operator_client.get(f"/memory/{zone.key}/").content.decode()
        )
    )
    assert listed and before - after == set(listed)


def test_a_stale_zone_edit_is_a_conflict(operator_client, memory_sources) -> None:
    zone = store("bub.zone")
    before = Path(zone.path).read_bytes()
    r = operator_client.post(
        f"/memory/{zone.key}/zone", {"action": "long_term", "text": "x", "base_version": "3"}
    )
    assert r.status_code == 409 and Path(zone.path).read_bytes() == before


def test_moving_the_zone_to_a_sidecar_leaves_the_tape_alone_afterwards(
    operator_client, memory_sources
) -> None:
    zone = store("bub.zone")
    tape = Path(zone.path)
    operator_client.post(f"/memory/{zone.key}/zone", {"action": "move", "base_version": "8"})
    sidecar = tape.with_name("hand_memory_zone__sidecar__memory.jsonl")
    assert sidecar.exists()
    tape_bytes = tape.read_bytes()
    page = operator_client.get(f"/memory/{zone.key}/").content.decode()
    assert "Kept in the memory sidecar" in page and "the agent never reads it" in page
    version = zone_version(operator_client, zone.key)
    operator_client.post(
        f"/memory/{zone.key}/zone", {"action": "daily", "text": "moved fine", "base_version": version}
    )
    assert tape.read_bytes() == tape_bytes
    assert "moved fine" in sidecar.read_text()


def test_yachiyo_entries_are_added_by_the_agents_rules(operator_client, memory_sources) -> None:
    memory = store("yachiyo.memory")
    version = zone_version(operator_client, memory.key)
    r = operator_client.post(
        f"/memory/{memory.key}/entries",
        {
            "action": "add",
            "content": "  Prefers dark mode  ",
            "keywords": "UI, Theme",
            "base_version": version,
        },
    )
    assert r.status_code == 302
    page = operator_client.get(f"/memory/{memory.key}/").content.decode()
    assert "Prefers dark mode" in page and '<span class="badge">ui</span>' in page
    assert AuditEvent.objects.get().action == "entry.add"


def test_araliya_kv_values_are_set_and_deleted(operator_client, memory_sources) -> None:
    kv = MemoryStore.objects.filter(kind="araliya.kv").order_by("owner").first()
    version = zone_version(operator_client, kv.key)
    operator_client.post(
        f"/memory/{kv.key}/kv", {"action": "set", "key": "mood", "value": "sunny", "base_version": version}
    )
    assert '"mood"' in Path(kv.path).read_text()
    version = zone_version(operator_client, kv.key)
    operator_client.post(
        f"/memory/{kv.key}/kv",
        {"action": "delete", "key": "mood", "base_version": version, "confirmed": "on"},
    )
    assert '"mood"' not in Path(kv.path).read_text()
    assert [e.action for e in AuditEvent.objects.order_by("id")] == ["kv.set", "kv.delete"]


def test_the_audit_log_is_for_admins_and_filters(
    client, user_factory, operator_client, memory_sources
) -> None:
    memory = store("nanobot.file", "USER.md")
    base = zone_version(operator_client, memory.key)
    operator_client.post(f"/memory/{memory.key}/edit", {"text": "audited\n", "base_version": base})
    assert operator_client.get("/audit/").status_code == 403
    client.force_login(user_factory("ada", "admin"))
    page = client.get("/audit/?q=olga").content.decode()
    assert "USER.md" in page and "+audited" in page
    assert "No writes yet." in client.get("/audit/?action=kv.set").content.decode()


@pytest.mark.parametrize(
    ("kind", "url", "data", "question"),
    [
        ("bub.zone", "zone", {"action": "clear", "base_version": "8"}, "Clear all memory?"),
        (
            "bub.zone",
            "zone",
            {"action": "restore", "version": "5", "base_version": "8"},
            "Restore version 5?",
        ),
        ("araliya.kv", "kv", {"action": "delete", "key": "mood"}, "Delete the key &#x27;mood&#x27;?"),
    ],
)
def test_a_destructive_action_asks_first_and_writes_only_when_confirmed(
    operator_client, memory_sources, kind, url, data, question
) -> None:
    target = store(kind)
    if kind == "araliya.kv":
        target = MemoryStore.objects.filter(kind=kind).order_by("owner").first()
        version = zone_version(operator_client, target.key)
        setting = {"action": "set", "key": "mood", "value": "sunny", "base_version": version}
        operator_client.post(f"/memory/{target.key}/kv", setting)
        AuditEvent.objects.all().delete()
        data = {**data, "base_version": zone_version(operator_client, target.key)}
    before = Path(target.path).read_bytes()
    asked = operator_client.post(f"/memory/{target.key}/{url}", data)
    page = asked.content.decode()
    assert asked.status_code == 200 and question in page and 'name="confirmed" value="on"' in page
    assert Path(target.path).read_bytes() == before and not AuditEvent.objects.exists()
    done = operator_client.post(f"/memory/{target.key}/{url}", {**data, "confirmed": "on"})
    assert done.status_code == 302 and AuditEvent.objects.count() == 1
