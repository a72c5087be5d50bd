"""Blame: every line of a memory store, with the version that brought it, when, and who wrote it."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from memory_admin.stores import bub_zone, nanobot_git
from tapeview.accounts.models import AuditEvent
from tapeview.sources.bub import scan, tool_calls
from tapeview.tapes import discovery, rows
from tapeview.tapes.models import Tape
from tapeview.tapes.timeline import read_rows
from tests.conftest import FIXTURES
from tests.memory_admin.test_stores_nanobot import GITIGNORE, commit_as_nanobot

pytestmark = pytest.mark.django_db
WRITERS = {"memory_save", "memory_daily", "memory_clear", "memory_prune"}


def store(kind: str, title: str | None = None) -> MemoryStore:
    stores = MemoryStore.objects.filter(kind=kind)
    return stores.get(title=title) if title else stores.first()


def blame_of(client, store_id: str) -> list[dict]:
    r = client.get(f"/api/memory/{store_id}/blame", {"limit": 500})
    assert r.status_code == 200 and r.json()["next_cursor"] is None
    return r.json()["items"]


def put_long_term(client, store_id: str, content: str, base: str):
    body = {"content": content, "base_version": base}
    r = client.put(f"/api/memory/{store_id}/long-term", body, content_type="application/json")
    assert r.status_code == 200, r.content
    return r.json()


def moment(value: str | datetime | None) -> datetime | None:
    """A time to compare at the API's precision (milliseconds)."""
    if value is None:
        return None
    value = datetime.fromisoformat(value) if isinstance(value, str) else value
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def writer_of(path: Path, zone: bub_zone.Zone, zones: list[bub_zone.Zone]) -> int:
    """The first memory-writing tool call or `,memory.*` command after the zone's seal, before the
    next zone opens: the agent appends a turn's calls after the zones its tools wrote; else the seal."""
    next_open = min((z.open_pos for z in zones if z.open_pos > zone.seal_pos), default=10**9)
    for entry in scan(path):
        if not zone.seal_pos < entry.pos < next_open:
            continue
        if entry.kind == "tool_call" and {c["name"] for c in tool_calls(entry)} & WRITERS:
            return entry.pos
        data = entry.payload.get("data") if entry.kind == "event" and entry.name == "command" else None
        if isinstance(data, dict) and str(data.get("name")).replace(".", "_") in WRITERS:
            return entry.pos
    return zone.seal_pos


@pytest.mark.parametrize("sample", ["hand_memory_zone.jsonl", "memory_zone_pr33_unmerged.jsonl"])
def test_zone_lines_point_at_the_version_and_entry_that_brought_them(
    sample: str, zone_before_clear, viewer_client
) -> None:
    path = zone_before_clear(sample)
    zone_store = MemoryStore.objects.get(kind="bub.zone", tape__name=path.stem)
    zones = bub_zone.read_file(path).zones
    read = [z for i, z in enumerate(zones) if z.version > max((y.version for y in zones[:i]), default=0)]
    lines = blame_of(viewer_client, zone_store.key)
    assert "\n".join(line["text"] for line in lines) == bub_zone.zone_text(read[-1])
    checked = 0
    for line in lines:
        if not line["text"].strip():
            continue  # a blank line is in many versions: which one brought it is difflib's call
        first = len(read) - 1
        while first and line["text"] in bub_zone.zone_text(read[first - 1]).splitlines():
            first -= 1
        zone = read[first]
        assert line["version"] == str(zone.version)
        assert line["author"] == "agent"
        assert moment(line["date"]) == moment(zone.date)
        assert line["source"] == {
            "tape_id": zone_store.tape.key,
            "pos": writer_of(path, zone, zones),
            "commit": None,
            "audit_id": None,
        }
        checked += 1
    assert checked >= 4


def test_a_line_saved_by_the_agent_links_its_memory_save_call_and_a_hand_made_one_its_seal(
    zone_before_clear, viewer_client
) -> None:
    path = zone_before_clear("hand_memory_zone.jsonl")
    zone_store = MemoryStore.objects.get(kind="bub.zone", tape__name=path.stem)
    lines = {line["text"]: line for line in blame_of(viewer_client, zone_store.key)}
    saved = lines["I prefer Python 3.12 and always want type hints."]["source"]["pos"]
    entry = next(e for e in scan(path) if e.pos == saved)
    assert entry.kind == "tool_call" and tool_calls(entry)[0]["name"] == "memory_save"
    by_hand = lines["Designed memory zone layout"]["source"]["pos"]
    assert next(e for e in scan(path) if e.pos == by_hand).name == "memory/seal"


def test_an_operator_edit_of_a_zone_is_blamed_on_the_user_with_the_audit_row(
    operator_client, memory_sources
) -> None:
    zone = store("bub.zone")
    before = operator_client.get(f"/api/memory/{zone.key}").json()
    sent = before["long_term_text"] + "\nWorks in UTC."
    after = put_long_term(operator_client, zone.key, sent, before["version"])
    audit = AuditEvent.objects.get(subject=f"store:{zone.key}", after=after["version"])
    new_zone = bub_zone.read_file(Path(zone.path)).zones[-1]
    old, new = blame_of(operator_client, zone.key)
    assert (old["text"], old["version"], old["author"]) == (
        before["long_term_text"],
        before["version"],
        "agent",
    )
    assert (new["text"], new["version"], new["author"]) == ("Works in UTC.", after["version"], "olga")
    assert new["source"] == {
        "tape_id": zone.tape.key,
        "pos": new_zone.seal_pos,
        "commit": None,
        "audit_id": audit.id,
    }


def test_an_operator_edit_of_a_text_file_is_blamed_on_the_user_and_the_rest_on_the_agent(
    operator_client, memory_sources
) -> None:
    user_md = store("nanobot.file", "USER.md")
    before = operator_client.get(f"/api/memory/{user_md.key}").json()
    after = put_long_term(
        operator_client, user_md.key, before["content"] + "Timezone: Europe/Berlin\n", before["version"]
    )
    audit = AuditEvent.objects.get(subject=f"store:{user_md.key}", after=after["version"])
    *kept, added = blame_of(operator_client, user_md.key)
    assert [line["text"] for line in kept] == before["content"].splitlines()
    assert {(line["version"], line["author"], line["source"] is None) for line in kept} == {
        (before["version"], "agent", True)
    }
    assert (added["text"], added["version"], added["author"]) == (
        "Timezone: Europe/Berlin",
        after["version"],
        "olga",
    )
    assert added["source"] == {"tape_id": None, "pos": None, "commit": None, "audit_id": audit.id}


def test_dream_commits_are_the_agents_and_a_tapeview_commit_its_users(
    operator_client, memory_sources
) -> None:
    memory = store("nanobot.memory")
    workspace = Path(memory.path).parents[1]
    operator_client.get(f"/api/memory/{memory.key}")  # Tapeview has seen the file before Dream commits
    from dulwich import porcelain

    porcelain.init(str(workspace))
    (workspace / ".gitignore").write_text(GITIGNORE)
    commit_as_nanobot(workspace, b"init: nanobot memory store")
    path = Path(memory.path)
    path.write_text(path.read_text() + "- Dream learned this\n")
    commit_as_nanobot(workspace, b"dream: periodic memory consolidation\n\nmemory/MEMORY.md: +1 -0\n")
    dream_id, init_id = (c.id for c in nanobot_git.file_versions(workspace, "memory/MEMORY.md"))

    lines = blame_of(operator_client, memory.key)
    dreamt = next(line for line in lines if line["text"] == "- Dream learned this")
    assert dreamt["version"] == f"git:{dream_id}" and dreamt["author"] == "agent"
    assert dreamt["source"] == {"tape_id": None, "pos": None, "commit": dream_id, "audit_id": None}
    # Tapeview saw the older lines moments before nanobot's first commit: that commit is their version.
    older = [line for line in lines if line is not dreamt]
    assert {(line["version"], line["source"]["commit"]) for line in older} == {(f"git:{init_id}", init_id)}

    now = operator_client.get(f"/api/memory/{memory.key}").json()
    after = put_long_term(operator_client, memory.key, now["content"] + "- Olga added this\n", now["version"])
    audit = AuditEvent.objects.get(subject=f"store:{memory.key}", after=after["version"])
    added = blame_of(operator_client, memory.key)[-1]
    assert (added["text"], added["author"]) == ("- Olga added this", "olga")
    assert added["source"]["audit_id"] == audit.id and added["source"]["commit"]
    assert added["source"]["commit"] == nanobot_git.file_versions(workspace, "memory/MEMORY.md")[0].id


def test_yachiyo_lines_point_at_the_memory_write_trace_of_their_session(
    settings, viewer_client, memory_sources
) -> None:
    shutil.copytree(
        FIXTURES / "yachiyo" / "data" / "session-store", memory_sources["yachiyo"] / "session-store"
    )
    discovery.sync()
    memory = store("yachiyo.memory")
    entries = json.loads(Path(memory.path).read_text())["entries"]
    lines = {line["text"]: line for line in blame_of(viewer_client, memory.key)}
    found = 0
    for entry in entries:
        line = lines[entry["content"].splitlines()[0]]
        assert line["author"] == "agent"
        assert moment(line["date"]) == moment(entry["created_at"])
        tape = Tape.objects.filter(kind="yachiyo", name=entry["source_session_id"]).first()
        if tape is None:
            assert line["source"] is None  # a session the index does not have
            continue
        source = line["source"]
        assert source["tape_id"] == tape.key
        row = rows.at(tape, source["pos"])
        call = read_rows(tape, [row])[0]
        assert call.kind == "tool_call" and "memory_write" in call.name
        assert call.meta["trace_id"] == entry["source_trace_id"]
        assert entry["metadata"]["call_id"] in call.meta["call_ids"]
        found += 1
    assert found >= 9


def test_araliya_lines_are_the_agents_with_the_time_set_and_no_source(viewer_client, memory_sources) -> None:
    kv = MemoryStore.objects.filter(kind="araliya.kv").order_by("-size").first()
    stamps = {e["key"]: e["ts"] for e in json.loads(Path(kv.path).read_text())["entries"]}
    lines = blame_of(viewer_client, kv.key)
    assert lines and all(line["author"] == "agent" and line["source"] is None for line in lines)
    first = lines[0]
    assert first["text"].startswith("working_memory: ")
    assert moment(first["date"]) == moment(stamps["working_memory"])
    page = viewer_client.get(f"/memory/{kv.key}/blame")
    assert "author agent, source unknown: araliya records no trace of the turn" in page.content.decode()


def test_blame_pages_by_cursor(reader, memory_sources) -> None:
    memory = store("nanobot.memory")
    everything = reader.get(f"/api/memory/{memory.key}/blame", limit=500).json()["items"]
    seen, cursor = [], None
    while True:
        page = reader.get(
            f"/api/memory/{memory.key}/blame", limit=7, **({"cursor": cursor} if cursor else {})
        )
        seen += page.json()["items"]
        if not (cursor := page.json()["next_cursor"]):
            break
    assert seen == everything and len(everything) > 7


def test_blame_of_an_unknown_store_is_404(reader, memory_sources) -> None:
    r = reader.get("/api/memory/0000000000000000/blame")
    assert r.status_code == 404 and r.json() == {"detail": "no such memory store"}


def test_the_blame_page_links_each_line_to_what_wrote_it(operator_client, memory_sources) -> None:
    zone = store("bub.zone")
    before = operator_client.get(f"/api/memory/{zone.key}").json()
    put_long_term(operator_client, zone.key, before["long_term_text"] + "\nWorks in UTC.", before["version"])
    audit = AuditEvent.objects.get(subject=f"store:{zone.key}", action="zone.long_term")
    page = operator_client.get(f"/memory/{zone.key}/blame")
    html = page.content.decode()
    assert page.status_code == 200
    seal = bub_zone.read_file(Path(zone.path)).zones[-2].seal_pos
    assert f'href="/tapes/{zone.tape.key}/entries/{seal}/"' in html  # the agent's line: its seal
    assert f"audit row #{audit.id}" in html and f'href="/memory/{zone.key}/#audit"' in html
    assert "Works in UTC." in html and "olga" in html
    detail = operator_client.get(f"/memory/{zone.key}/").content.decode()
    assert f'href="/memory/{zone.key}/blame"' in detail
