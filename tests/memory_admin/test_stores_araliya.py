"""araliya-bot's kv.json, read and edited by its own kv_set/kv_delete rules (tests/fixtures/araliya)."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_admin.stores import files
from memory_admin.stores.araliya_kv import delete_value, discover, parse, read, set_value
from memory_admin.stores.model import StaleEdit, StoreError, StoreRef, version_of

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "araliya"
IDENTITY = "bot-pkey51aee87e"
CHAT = "01a200e4-e18d-7ffd-b1d0-f7592c930f76"  # 197 of its 200 cap
UNUSED = "01a200e5-0f28-73fd-a2f0-3121a0683a3a"  # {"cap": 200, "entries": []}
CAPPED = "01a200e5-0f28-7b32-bd7c-5edc518e2448"  # only an empty working_memory
NOW = datetime(2026, 11, 23, 4, 5, 6, 999000, tzinfo=UTC)
TS = "2026-11-23T04:05:06Z"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A folder of identity dirs holding the real araliya memory files."""
    shutil.copytree(FIXTURE, tmp_path / "work")
    return tmp_path / "work"


@pytest.fixture
def memory(work: Path) -> Path:
    return work / IDENTITY / "memory"


def ref_of(memory: Path, sid: str) -> StoreRef:
    return next(r for r in discover(memory) if r.path.parent.name == sid)


def write_kv(memory: Path, sid: str, doc: dict) -> StoreRef:
    """A hand-made kv.json in araliya's own style (serde_json::to_string_pretty)."""
    path = memory / "sessions" / sid / "kv.json"
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    return ref_of(memory, sid)


def entries(*keys: str, ts: str = "2026-11-22T01:35:41Z") -> list[dict]:
    return [{"key": k, "value": f"v-{k}", "ts": ts} for k in keys]


def keys_on_disk(ref: StoreRef) -> list[str]:
    return [e["key"] for e in json.loads(ref.path.read_bytes())["entries"]]


@pytest.mark.parametrize(
    ("where", "prefix"),
    [("", f"{IDENTITY}/memory/"), (IDENTITY, "memory/"), (f"{IDENTITY}/memory", "")],
    ids=["folder-of-identities", "identity-dir", "memory-dir"],
)
def test_discover_finds_each_sessions_kv_json_from_any_level(work: Path, where: str, prefix: str) -> None:
    root = work / where
    refs = discover(root)
    assert [(r.owner, r.kind, r.title) for r in refs] == [
        (f"{CHAT} (chat)", "araliya.kv", "kv.json"),
        (f"{UNUSED} (chat)", "araliya.kv", "kv.json"),
        (f"{CAPPED} (observer)", "araliya.kv", "kv.json"),
    ]  # oldest first, then by id (tapeview's araliya session order)
    assert [r.key for r in refs] == [f"{prefix}sessions/{sid}/kv.json" for sid in (CHAT, UNUSED, CAPPED)]
    assert all(r.path == root / r.key for r in refs)
    assert refs[0].note == "197 keys (cap 200)"


def test_reading_the_real_file_lists_every_pair_in_the_agents_order(memory: Path) -> None:
    ref = ref_of(memory, CHAT)
    snapshot = read(ref)
    on_disk = json.loads(ref.path.read_bytes())["entries"]
    assert [(k, v) for k, v in snapshot.items] == [(e["key"], e["value"]) for e in on_disk]
    assert len(snapshot.items) == 197
    assert snapshot.items[0].key == "working_memory"
    assert dict(snapshot.items)["json_blob"] == '{"nested":{"a":1,"b":[true,null]},"quote":"\\""}'
    assert snapshot.items[-1] == ("restarted_with_small_cap", "true")
    assert snapshot.version == version_of(ref.path.read_bytes())


def test_the_text_is_one_key_value_line_per_pair(memory: Path) -> None:
    text = read(ref_of(memory, CHAT)).text
    assert text.startswith("working_memory: # Working memory\n\n  - user: Sachi (prefers short answers)\n")
    assert "\npref.emoji: ok 👍\njson_blob: " in text
    assert "\nempty_value: \n" in text
    assert text.endswith("restarted_with_small_cap: true\n")


def test_working_memory_is_listed_first_wherever_it_sits_in_the_file(memory: Path) -> None:
    ref = write_kv(memory, UNUSED, {"cap": 5, "entries": entries("a", "working_memory", "b")})
    assert [k for k, _ in read(ref).items] == ["working_memory", "a", "b"]


def test_a_hand_made_duplicate_key_reads_as_its_last_value_at_its_last_place(memory: Path) -> None:
    rows = entries("a", "b") + [{"key": "a", "value": "newer", "ts": "2026-11-22T01:35:42Z"}]
    ref = write_kv(memory, UNUSED, {"cap": 5, "entries": rows})
    assert read(ref).items == [("b", "v-b"), ("a", "newer")]


@pytest.mark.parametrize("sid", [CHAT, UNUSED, CAPPED])
def test_rewriting_an_unchanged_real_file_reproduces_its_bytes(sid: str) -> None:
    raw = (FIXTURE / IDENTITY / "memory" / "sessions" / sid / "kv.json").read_bytes()
    assert parse(raw).dump() == raw


def test_setting_a_new_key_appends_it_with_a_fresh_ts(memory: Path) -> None:
    ref = ref_of(memory, CAPPED)
    version = set_value(ref, "mood", 'calm ☕\n"quoted"', read(ref).version, now=NOW)
    after = ref.path.read_bytes()
    assert after == (
        '{\n  "cap": 200,\n  "entries": [\n    {\n      "key": "working_memory",\n      "value": "",\n'
        '      "ts": "2026-11-22T01:35:41Z"\n    },\n    {\n      "key": "mood",\n'
        '      "value": "calm ☕\\n\\"quoted\\"",\n      "ts": "<TS>"\n    }\n  ]\n}'
    ).replace("<TS>", TS).encode("utf-8")
    assert version == version_of(after)


def test_setting_an_existing_key_moves_it_to_the_end(memory: Path) -> None:
    ref = ref_of(memory, CHAT)
    set_value(ref, "user_name", "Sachi", read(ref).version, now=NOW)
    on_disk = json.loads(ref.path.read_bytes())["entries"]
    assert len(on_disk) == 197
    assert on_disk[-1] == {"key": "user_name", "value": "Sachi", "ts": TS}
    assert [e["key"] for e in on_disk].count("user_name") == 1


def test_at_the_cap_a_set_evicts_the_entry_at_the_front_of_the_file_even_working_memory(memory: Path) -> None:
    ref = ref_of(memory, CHAT)
    for key in ("k1", "k2", "k3"):  # 197 -> 200: at the cap, nothing evicted yet
        set_value(ref, key, key, read(ref).version, now=NOW)
    assert keys_on_disk(ref)[0] == "working_memory" and len(keys_on_disk(ref)) == 200
    set_value(ref, "k4", "k4", read(ref).version, now=NOW)
    keys = keys_on_disk(ref)
    assert len(keys) == 200 and "working_memory" not in keys
    assert keys[0] == "user_name" and keys[-1] == "k4"
    assert read(ref).items[0].key == "user_name"


def test_at_the_cap_updating_an_existing_key_evicts_nothing(memory: Path) -> None:
    ref = write_kv(memory, UNUSED, {"cap": 3, "entries": entries("a", "b", "c")})
    set_value(ref, "a", "again", read(ref).version, now=NOW)
    assert keys_on_disk(ref) == ["b", "c", "a"]


def test_the_cap_comes_from_the_file_and_a_file_over_it_shrinks_on_the_next_set(memory: Path) -> None:
    ref = write_kv(memory, UNUSED, {"cap": 2, "entries": entries("a", "b", "c", "d")})
    assert len(read(ref).items) == 4  # only a set evicts
    set_value(ref, "e", "v", read(ref).version, now=NOW)
    assert keys_on_disk(ref) == ["d", "e"]


def test_a_cap_of_zero_evicts_the_value_just_set(memory: Path) -> None:
    ref = write_kv(memory, UNUSED, {"cap": 0, "entries": []})
    set_value(ref, "a", "b", read(ref).version, now=NOW)
    assert ref.path.read_bytes() == b'{\n  "cap": 0,\n  "entries": []\n}'


def test_deleting_removes_every_entry_of_the_key(memory: Path) -> None:
    rows = entries("a", "b", "a", "c")
    ref = write_kv(memory, UNUSED, {"cap": 9, "entries": rows})
    delete_value(ref, "a", read(ref).version)
    assert keys_on_disk(ref) == ["b", "c"]


def test_deleting_an_unknown_key_is_refused_and_nothing_is_written(memory: Path) -> None:
    ref = ref_of(memory, CHAT)
    before = ref.path.read_bytes()
    with pytest.raises(StoreError, match="no key"):
        delete_value(ref, "nope", version_of(before))
    assert ref.path.read_bytes() == before


NEW_LAYOUT = {
    "cap": 3,
    "order": ["working_memory", "b", "a"],
    "values": {"a": "1", "working_memory": "wm", "b": "2"},
}


def test_the_newer_order_values_layout_reads_in_order_and_rewrites_byte_for_byte(memory: Path) -> None:
    ref = write_kv(memory, UNUSED, NEW_LAYOUT)
    assert read(ref).items == [("working_memory", "wm"), ("b", "2"), ("a", "1")]
    assert parse(ref.path.read_bytes()).dump() == ref.path.read_bytes()
    assert "order/values" in ref.note


def test_the_newer_layout_evicts_the_first_key_of_order_and_keeps_its_shape(memory: Path) -> None:
    ref = write_kv(memory, UNUSED, NEW_LAYOUT)
    set_value(ref, "c", "3", read(ref).version, now=NOW)
    assert json.loads(ref.path.read_bytes()) == {
        "cap": 3,
        "order": ["b", "a", "c"],
        "values": {"a": "1", "b": "2", "c": "3"},
    }
    set_value(ref, "b", "two", read(ref).version, now=NOW)
    delete_value(ref, "a", read(ref).version)
    assert (
        ref.path.read_bytes()
        == b'{\n  "cap": 3,\n  "order": [\n    "c",\n    "b"\n  ],\n  "values": {\n    "b": "two",\n    "c": "3"\n  }\n}'
    )


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("", "x", "key must not be empty"),
        ("k", 3, "value must be a string"),
        ("k", {"a": 1}, "value must be a string"),
        (None, "x", "key must be a string"),
        ("k", "\ud83d", "not valid Unicode"),
    ],
)
def test_keys_and_values_must_be_strings_the_agent_can_store(memory: Path, key, value, problem: str) -> None:
    ref = ref_of(memory, CHAT)
    before = ref.path.read_bytes()
    with pytest.raises(StoreError, match=problem):
        set_value(ref, key, value, version_of(before), now=NOW)
    assert ref.path.read_bytes() == before


def test_an_empty_value_is_a_value(memory: Path) -> None:
    ref = ref_of(memory, UNUSED)
    set_value(ref, "blank", "", read(ref).version, now=NOW)
    assert read(ref).items == [("blank", "")]


@pytest.mark.parametrize(
    "doc",
    [
        {"entries": []},
        {"cap": 2},
        {"cap": 2.0, "entries": []},
        {"cap": -1, "entries": []},
        {"cap": 2, "entries": [{"key": "a", "value": 1, "ts": "x"}]},
        {"cap": 2, "order": ["a"], "values": {"a": None}},
        [1],
    ],
    ids=["no-cap", "no-entries", "float-cap", "negative-cap", "number-value", "null-value", "not-an-object"],
)
def test_a_file_araliya_calls_malformed_is_neither_read_nor_written(memory: Path, doc: object) -> None:
    path = memory / "sessions" / UNUSED / "kv.json"
    path.write_text(json.dumps(doc, indent=2))
    ref = ref_of(memory, UNUSED)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="malformed"):
        read(ref)
    with pytest.raises(StoreError, match="malformed"):
        set_value(ref, "a", "b", version_of(before), now=NOW)
    assert path.read_bytes() == before


@pytest.mark.parametrize("action", ["set", "delete"])
def test_a_stale_edit_raises_stale_edit_and_leaves_the_file_byte_for_byte_unchanged(
    memory: Path, action: str
) -> None:
    ref = ref_of(memory, CHAT)
    seen = read(ref)
    set_value(ref, "written_by_the_bot", "meanwhile", seen.version, now=NOW)
    current = ref.path.read_bytes()
    with pytest.raises(StaleEdit) as caught:
        if action == "set":
            set_value(ref, "lang", "en", seen.version, now=NOW)
        else:
            delete_value(ref, "lang", seen.version)
    assert ref.path.read_bytes() == current
    assert caught.value.current_version == version_of(current)
    assert caught.value.current_text == read(ref).text


def test_an_interrupted_write_leaves_the_original_intact_and_no_temp_file(
    memory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = ref_of(memory, CHAT)
    before = ref.path.read_bytes()

    def crash(src: str, dst: str) -> None:
        raise OSError("disk pulled")

    monkeypatch.setattr(files.os, "replace", crash)
    with pytest.raises(OSError, match="disk pulled"):
        set_value(ref, "k", "v", version_of(before), now=NOW)
    assert ref.path.read_bytes() == before
    assert sorted(os.listdir(ref.path.parent)) == ["kv.json", "transcript.md"]


def test_writes_never_touch_the_transcript(memory: Path) -> None:
    ref = ref_of(memory, CHAT)
    transcript = ref.path.parent / "transcript.md"
    before, stat = transcript.read_bytes(), transcript.stat()
    set_value(ref, "k", "v", read(ref).version, now=NOW)
    delete_value(ref, "k", read(ref).version)
    assert transcript.read_bytes() == before
    assert (transcript.stat().st_mtime_ns, transcript.stat().st_ino) == (stat.st_mtime_ns, stat.st_ino)


def test_a_session_without_kv_json_is_not_a_store_and_a_missing_file_reads_as_missing(memory: Path) -> None:
    path = memory / "sessions" / UNUSED / "kv.json"
    ref = ref_of(memory, UNUSED)
    path.unlink()
    assert UNUSED not in [r.path.parent.name for r in discover(memory)]
    assert read(ref).version == "missing"
    with pytest.raises(StoreError, match="no kv.json"):
        set_value(ref, "a", "b", "missing", now=NOW)
    assert not path.exists()
