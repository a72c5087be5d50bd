"""The memory API: stores, content and versions, diffs, conditional long-term edits, prunes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from memory_admin import writes
from memory_admin.models import MemoryStore
from tapeview.accounts.audit import Actor
from tapeview.accounts.models import AuditEvent
from tapeview.sources import bub
from tapeview.tapes import index

pytestmark = pytest.mark.django_db


def store(kind: str, title: str | None = None) -> MemoryStore:
    stores = MemoryStore.objects.filter(kind=kind)
    return stores.get(title=title) if title else stores.first()


def test_stores_of_every_family_are_listed_without_their_paths(reader, memory_sources) -> None:
    body = reader.get("/api/memory", limit=500).json()
    kinds = {s["kind"] for s in body["items"]}
    assert {"bub.zone", "nanobot.memory", "nanobot.history", "yachiyo.memory", "araliya.kv"} <= kinds
    assert "path" not in body["items"][0] and str(memory_sources["nanobot"]) not in json.dumps(body)
    zone = next(s for s in body["items"] if s["kind"] == "bub.zone")
    assert zone["tape_id"] and zone["long_term"] and zone["prune"]


def test_the_store_list_pages_by_cursor_and_filters_by_kind(reader, memory_sources) -> None:
    everything = [s["id"] for s in reader.get("/api/memory", limit=500).json()["items"]]
    seen, cursor = [], None
    while True:
        page = reader.get("/api/memory", limit=2, **({"cursor": cursor} if cursor else {})).json()
        seen += [s["id"] for s in page["items"]]
        if not (cursor := page["next_cursor"]):
            break
    assert seen == everything
    nanobot = reader.get("/api/memory", kind="nanobot").json()["items"]
    assert nanobot and all(s["kind"].startswith("nanobot.") for s in nanobot)


def test_a_store_gives_its_content_and_version(reader, memory_sources) -> None:
    memory = store("nanobot.memory")
    body = reader.get(f"/api/memory/{memory.key}").json()
    assert body["content"] == Path(memory.path).read_text() == body["long_term_text"]
    assert len(body["version"]) == 16 and body["daily"] is None


def test_a_zone_gives_its_long_term_text_and_notes_apart(reader, memory_sources) -> None:
    zone = store("bub.zone")
    writes.zone_write(zone, Actor("test"), "restore", "8", version=5)
    body = reader.get(f"/api/memory/{zone.key}").json()
    assert body["version"] == "9" and body["daily"]
    assert body["content"].startswith(body["long_term_text"])


def test_an_unknown_store_is_404(reader, memory_sources) -> None:
    for path in ("/api/memory/0000000000000000", "/api/memory/no-such/versions", "/api/memory/%C3%A9/diff"):
        r = reader.get(path)
        assert r.status_code == 404 and r.json() == {"detail": "no such memory store"}


def test_versions_and_the_diff_between_two(writer, memory_sources) -> None:
    memory = store("nanobot.file", "USER.md")
    first = writer.get(f"/api/memory/{memory.key}").json()
    sent = first["content"] + "Timezone: Europe/Berlin\n"
    second = writer.put(
        f"/api/memory/{memory.key}/long-term", {"content": sent, "base_version": first["version"]}
    ).json()
    versions = [v["version"] for v in writer.get(f"/api/memory/{memory.key}/versions").json()["items"]]
    assert versions[:2] == [second["version"], first["version"]]
    diff = writer.get(f"/api/memory/{memory.key}/diff").json()
    assert (diff["from_version"], diff["to_version"]) == (first["version"], second["version"])
    assert "+Timezone: Europe/Berlin" in diff["diff"]
    back = writer.get(f"/api/memory/{memory.key}/diff", **{"from": second["version"], "to": first["version"]})
    assert "-Timezone: Europe/Berlin" in back.json()["diff"]
    assert writer.get(f"/api/memory/{memory.key}/diff", to="nope").status_code == 404


def test_a_long_term_edit_is_written_and_audited_under_the_tokens_name(writer, memory_sources) -> None:
    memory = store("nanobot.memory")
    current = writer.get(f"/api/memory/{memory.key}").json()
    text = current["content"] + "\n- Prefers metric units.\n"
    r = writer.put(
        f"/api/memory/{memory.key}/long-term", {"content": text, "base_version": current["version"]}
    )
    assert r.status_code == 200 and r.json()["content"] == text and r.json()["version"] != current["version"]
    assert Path(memory.path).read_text() == text
    event = AuditEvent.objects.get(subject=f"store:{memory.key}")
    assert (event.actor, event.action, event.before) == ("token:writer", "edit", current["version"])


def test_a_stale_edit_is_409_with_the_current_content_and_a_diff(writer, memory_sources) -> None:
    memory = store("nanobot.memory")
    path = Path(memory.path)
    base = writer.get(f"/api/memory/{memory.key}").json()["version"]
    path.write_text(path.read_text() + "\n- Added by Dream meanwhile.\n")
    agents = path.read_bytes()
    r = writer.put(f"/api/memory/{memory.key}/long-term", {"content": "my version\n", "base_version": base})
    assert r.status_code == 409 and path.read_bytes() == agents
    body = r.json()
    assert body["current_content"] == agents.decode() and body["current_version"] != base
    assert "+my version" in body["diff"] and "-- Added by Dream meanwhile." in body["diff"]
    refused = AuditEvent.objects.get()  # the conflict is in the audit log, as refused
    assert body["detail"] and (refused.action, refused.outcome) == ("edit", AuditEvent.REFUSED)
    again = writer.put(
        f"/api/memory/{memory.key}/long-term",
        {"content": "my version\n", "base_version": body["current_version"]},
    )
    assert again.status_code == 200 and path.read_text() == "my version\n"


def test_a_zone_long_term_edit_appends_a_new_version(writer, memory_sources, idle) -> None:
    zone = store("bub.zone")
    before = Path(zone.path).read_bytes()
    r = writer.put(f"/api/memory/{zone.key}/long-term", {"content": "Likes tea.", "base_version": "8"})
    assert r.status_code == 200 and r.json()["version"] == "9" and r.json()["long_term_text"] == "Likes tea."
    assert Path(zone.path).read_bytes().startswith(before)
    assert [e.name for e in list(bub.scan(Path(zone.path)))[-3:]] == [
        "memory/open",
        "memory.long_term",
        "memory/seal",
    ]
    assert AuditEvent.objects.get().actor == "token:writer"


def test_a_zone_edit_while_another_request_indexes_the_tape_answers_with_what_it_wrote(
    writer, memory_sources, idle, monkeypatch
) -> None:
    """Another request holds the tape's index lease for a moment: the edit waits for it, not stale."""
    zone = store("bub.zone")
    real, free_at = index.lease_of, time.monotonic() + 0.5
    monkeypatch.setattr(index, "lease_of", lambda tape: real(tape) if time.monotonic() > free_at else None)
    r = writer.put(f"/api/memory/{zone.key}/long-term", {"content": "Likes tea.", "base_version": "8"})
    assert r.status_code == 200 and r.json()["version"] == "9" and r.json()["long_term_text"] == "Likes tea."
    assert writer.get(f"/api/memory/{zone.key}").json()["long_term_text"] == "Likes tea."


@pytest.mark.parametrize("base", ["3", "abc", "٣"])
def test_a_stale_zone_edit_is_409_about_the_long_term_text(writer, memory_sources, idle, base) -> None:
    zone = store("bub.zone")
    before = Path(zone.path).read_bytes()
    r = writer.put(f"/api/memory/{zone.key}/long-term", {"content": "x", "base_version": base})
    assert r.status_code == 409 and r.json()["current_version"] == "8"
    assert "+x" in r.json()["diff"] and Path(zone.path).read_bytes() == before


def test_a_zone_write_on_a_busy_tape_is_409_with_retry_after(writer, memory_sources, settings) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 3600
    zone = store("bub.zone")
    os.utime(zone.path)
    before = Path(zone.path).read_bytes()
    r = writer.put(f"/api/memory/{zone.key}/long-term", {"content": "x", "base_version": "8"})
    assert r.status_code == 409 and int(r["Retry-After"]) >= 1 and r.json()["retry_after"] >= 1
    assert Path(zone.path).read_bytes() == before


def test_stores_without_long_term_text_refuse_an_edit_with_400(writer, memory_sources) -> None:
    for kind in ("yachiyo.memory", "araliya.kv", "nanobot.history"):
        s = store(kind)
        r = writer.put(f"/api/memory/{s.key}/long-term", {"content": "x", "base_version": s.version or "x"})
        assert r.status_code == 400 and list(r.json()) == ["detail"], kind


@pytest.mark.parametrize(
    "body",
    [{}, {"content": "x"}, {"content": "x", "base_version": ""}, {"content": 3, "base_version": "a b"}],
)
def test_a_bad_edit_body_is_422(writer, memory_sources, body) -> None:
    r = writer.put(f"/api/memory/{store('nanobot.memory').key}/long-term", body)
    assert r.status_code == 422 and isinstance(r.json()["detail"], list)


def test_a_prune_dry_run_says_exactly_what_the_prune_removes(writer, memory_sources, idle) -> None:
    zone = store("bub.zone")
    writes.zone_write(zone, Actor("test"), "restore", "8", version=5)
    before = Path(zone.path).read_bytes()
    dry = writer.post(f"/api/memory/{zone.key}/prune", {"older_than_days": 30, "dry_run": True}).json()
    assert dry["dry_run"] is True and dry["removed"] and Path(zone.path).read_bytes() == before
    days = set(writer.get(f"/api/memory/{zone.key}").json()["daily"])
    done = writer.post(f"/api/memory/{zone.key}/prune", {"older_than_days": 30, "dry_run": False}).json()
    assert done["removed"] == dry["removed"] and int(done["version"]) == int(dry["version"]) + 1
    after = set(writer.get(f"/api/memory/{zone.key}").json()["daily"])
    assert days - after == set(dry["removed"])
    again = writer.post(f"/api/memory/{zone.key}/prune", {"older_than_days": 30, "dry_run": False}).json()
    assert again == {"dry_run": False, "removed": [], "version": done["version"]}


def test_a_stale_prune_is_409(writer, memory_sources, idle) -> None:
    zone = store("bub.zone")
    writes.zone_write(zone, Actor("test"), "restore", "8", version=5)
    r = writer.post(
        f"/api/memory/{zone.key}/prune", {"older_than_days": 30, "dry_run": False, "base_version": "8"}
    )
    assert r.status_code == 409 and r.json()["current_version"] == "9"


def test_prune_is_for_zones_only_and_checks_its_days(writer, memory_sources) -> None:
    r = writer.post(f"/api/memory/{store('nanobot.memory').key}/prune", {"older_than_days": 30})
    assert r.status_code == 400 and "Bub memory zones" in r.json()["detail"]
    zone = store("bub.zone")
    for days in (-1, 40000, "soon"):
        assert writer.post(f"/api/memory/{zone.key}/prune", {"older_than_days": days}).status_code == 422
