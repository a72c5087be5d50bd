"""yachiyo's long-term memory.json, read and edited by the gateway's own rules (tests/fixtures/yachiyo_memory)."""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from memory_admin.stores import files, yachiyo_memory
from memory_admin.stores.js_json import stringify
from memory_admin.stores.model import StaleEdit, StoreError, StoreRef, version_of
from memory_admin.stores.yachiyo_memory import (
    add_entry,
    clip_utf16,
    delete_entry,
    discover,
    edit_entry,
    js_iso,
    normalize_keywords,
    read,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "yachiyo_memory"
SAMPLE = FIXTURE / "data" / "long-term-memory" / "memory.json"
NOW = datetime(2026, 11, 23, 4, 5, 6, 789123, tzinfo=UTC)
STAMP = "2026-11-23T04:05:06.789Z"
MERGED = "mem-1f9c04b4-1ad2-4731-8255-04fc38ebad36"  # "User prefers concise answers with bullet points"
COLOR = "mem-ec42d049-853e-40f7-ba1f-362b5d8b5796"  # 用户最喜欢的颜色是蓝色, the first entry in the file
UUID4 = re.compile(r"mem-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A yachiyo home holding the real memory.json (and a session store beside it)."""
    shutil.copytree(FIXTURE, tmp_path / "yachiyo")
    (tmp_path / "yachiyo" / "data" / "session-store" / "sessions").mkdir(parents=True)
    return tmp_path / "yachiyo"


@pytest.fixture
def ref(home: Path) -> StoreRef:
    return discover(home)[0]


def raw_doc(ref: StoreRef) -> dict:
    return json.loads(ref.path.read_bytes())


def test_discover_finds_the_memory_json_beside_the_session_store(home: Path) -> None:
    (found,) = discover(home)
    assert (found.kind, found.owner, found.key) == (
        "yachiyo.memory",
        "yachiyo",
        "data/long-term-memory/memory.json",
    )
    assert found.path == home / "data" / "long-term-memory" / "memory.json"
    assert found.editable and found.note == ""


@pytest.mark.parametrize("where", ["data", "data/session-store", "data/long-term-memory"])
def test_discover_accepts_the_data_dir_the_session_store_or_the_memory_dir(home: Path, where: str) -> None:
    (found,) = discover(home / where)
    assert found.path == home / "data" / "long-term-memory" / "memory.json"


def test_discover_finds_nothing_outside_a_yachiyo_home(tmp_path: Path) -> None:
    assert discover(tmp_path) == []


def test_reading_the_real_file_lists_every_entry_newest_updated_first(ref: StoreRef) -> None:
    snapshot = read(ref)
    on_disk = raw_doc(ref)["entries"]
    assert len(snapshot.items) == len(on_disk) == 51
    assert [e.id for e in snapshot.items] == [
        e["id"] for e in sorted(on_disk, key=lambda e: e["updated_at"], reverse=True)
    ]
    assert snapshot.items[0].content == "User has no fixed lunch time"
    assert snapshot.items[-1].id == COLOR
    assert snapshot.version == version_of(SAMPLE.read_bytes())


def test_an_entry_carries_content_keywords_timestamps_and_provenance(ref: StoreRef) -> None:
    color = next(e for e in read(ref).items if e.id == COLOR)
    assert color.content == "用户最喜欢的颜色是蓝色"
    assert color.keywords == ("颜色", "蓝色", "偏好", "favorite-color")
    assert (color.created_at, color.updated_at) == ("2026-11-22T01:38:15.103Z", "2026-11-22T01:38:15.103Z")
    assert color.source_session_id == "sess-zh-prefs-0001"
    assert color.source_trace_id == "d546e014-daf7-48eb-a8fb-85b6f4839cd9"
    assert color.metadata == {"step_index": 1, "call_id": "call_1"}


def test_the_text_has_one_block_per_entry_in_file_order(ref: StoreRef) -> None:
    text = read(ref).text
    assert text.startswith(
        "用户最喜欢的颜色是蓝色\nkeywords: 颜色, 蓝色, 偏好, favorite-color\n\n用户每天早上七点起床\n"
    )
    assert text.endswith("User has no fixed lunch time\nkeywords:\n")


def test_rewriting_the_unchanged_document_reproduces_the_original_bytes() -> None:
    raw = SAMPLE.read_bytes()
    assert stringify(json.loads(raw)).encode("utf-8") == raw


def test_a_lone_surrogate_left_by_a_js_slice_survives_a_rewrite_and_reads_as_a_replacement(
    ref: StoreRef,
) -> None:
    doc = raw_doc(ref)
    doc["entries"][0]["content"] = "clipped mid-emoji \ud83d"
    raw = stringify(doc).encode("utf-8")
    assert b'"clipped mid-emoji \\ud83d"' in raw
    assert stringify(json.loads(raw)).encode("utf-8") == raw
    ref.path.write_bytes(raw)
    assert next(e for e in read(ref).items if e.id == COLOR).content == "clipped mid-emoji \ufffd"
    _, version = add_entry(ref, "something else", [], version_of(raw), now=NOW)
    assert b'"clipped mid-emoji \\ud83d"' in ref.path.read_bytes()


def test_numbers_and_keys_are_written_as_json_stringify_writes_them() -> None:
    doc = {"b": 1e-05, "10": 2**60 * 1.0, "2": 0.1, "01": -0.0, "x": 1e21, "e": [], "o": {}}
    assert stringify(doc) == (
        '{\n  "2": 0.1,\n  "10": 1152921504606847000,\n  "b": 0.00001,\n  "01": 0,\n'
        '  "x": 1e+21,\n  "e": [],\n  "o": {}\n}'
    )


def test_adding_appends_a_new_entry_in_the_gateways_shape(ref: StoreRef) -> None:
    before = ref.path.read_bytes()
    entry, version = add_entry(
        ref, "  Prefers tea over coffee ☕\n", [" Tea ", "DRINKS", "tea"], version_of(before), now=NOW
    )
    after = ref.path.read_bytes()
    assert UUID4.fullmatch(entry.id)
    assert (entry.content, entry.keywords) == ("Prefers tea over coffee ☕", ("tea", "drinks"))
    assert version == version_of(after)
    tail = (
        (
            '    {\n      "id": "<ID>",\n      "content": "Prefers tea over coffee ☕",\n'
            '      "keywords": [\n        "tea",\n        "drinks"\n      ],\n'
            '      "source_session_id": null,\n      "source_trace_id": null,\n      "metadata": {},\n'
            '      "created_at": "<TS>",\n      "updated_at": "<TS>"\n    }\n  ]\n}'
        )
        .replace("<ID>", entry.id)
        .replace("<TS>", STAMP)
    )
    assert after.endswith(tail.encode("utf-8"))
    # Nothing else changes: the top-level updated_at, then the entry appended after the last one.
    old_stamp = b'"updated_at": "2026-11-22T01:38:25.060Z"'
    head = before.replace(old_stamp, b'"updated_at": "%s"' % STAMP.encode(), 1)[: -len(b"\n  ]\n}")]
    assert after == head + b",\n" + tail.encode("utf-8")
    doc = raw_doc(ref)
    assert doc["updated_at"] == STAMP and len(doc["entries"]) == 52
    assert read(ref).items[0].id == entry.id


def test_adding_content_that_exists_in_another_case_merges_into_that_entry(ref: StoreRef) -> None:
    before = raw_doc(ref)
    entry, _ = add_entry(
        ref,
        " user prefers CONCISE answers with bullet points ",
        ["Bullets", "Markdown"],
        version_of(ref.path.read_bytes()),
        now=NOW,
        metadata={"call_id": "tapeview"},
    )
    doc = raw_doc(ref)
    assert len(doc["entries"]) == len(before["entries"])
    position = [e["id"] for e in doc["entries"]].index(MERGED)
    assert position == [e["id"] for e in before["entries"]].index(MERGED)
    merged = doc["entries"][position]
    assert merged["content"] == "User prefers concise answers with bullet points"
    assert merged["keywords"] == ["style", "concise", "format", "brevity", "bullets", "markdown"]
    assert merged["created_at"] == "2026-11-22T01:38:17.223Z"
    assert merged["updated_at"] == doc["updated_at"] == STAMP
    assert merged["source_session_id"] == "sess-project-facts"
    assert merged["metadata"] == {"step_index": 1, "call_id": "tapeview"}
    assert entry.id == MERGED


def test_a_900_character_cjk_and_emoji_content_is_clipped_at_800_units_without_a_broken_surrogate(
    ref: StoreRef,
) -> None:
    content = "猫😀" * 450  # 900 characters, 1350 UTF-16 units; unit 800 is the first half of an emoji
    entry, _ = add_entry(ref, content, ["长"], version_of(ref.path.read_bytes()), now=NOW)
    assert entry.content == "猫😀" * 266 + "猫"
    assert len(entry.content.encode("utf-16-le")) // 2 == 799
    stored = raw_doc(ref)["entries"][-1]["content"]
    assert stored == entry.content
    assert b"\\ud" not in ref.path.read_bytes()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("猫" * 800, "猫" * 800),
        ("猫" * 801, "猫" * 800),
        ("猫" * 798 + "😀" + "x", "猫" * 798 + "😀"),
        ("猫" * 799 + "😀", "猫" * 799),
        ("short 😀", "short 😀"),
    ],
    ids=["exactly-800", "801-bmp", "pair-ends-at-800", "pair-straddles-800", "short"],
)
def test_clipping_counts_utf16_units_and_never_splits_a_pair(text: str, expected: str) -> None:
    assert clip_utf16(text, 800) == expected


def test_keywords_are_trimmed_lower_cased_and_deduplicated() -> None:
    assert normalize_keywords([" Event-Bus ", "TOOL", "tool", "", "   ", 3, None, "Ünïcode"]) == [
        "event-bus",
        "tool",
        "ünïcode",
    ]


def test_content_is_trimmed_the_way_js_trim_trims(ref: StoreRef) -> None:
    entry, _ = add_entry(ref, "\ufeff\u3000 hi \x1c\u2028", [], version_of(ref.path.read_bytes()), now=NOW)
    assert entry.content == "hi \x1c"


@pytest.mark.parametrize("content", ["", "  \n\t\u3000", None])
def test_empty_content_is_refused_and_nothing_is_written(ref: StoreRef, content: object) -> None:
    before = ref.path.read_bytes()
    with pytest.raises(StoreError, match="non-empty"):
        add_entry(ref, content, ["x"], version_of(before), now=NOW)  # type: ignore[arg-type]
    assert ref.path.read_bytes() == before


def test_editing_replaces_content_and_keywords_and_keeps_id_created_at_and_provenance(ref: StoreRef) -> None:
    entry, version = edit_entry(
        ref, COLOR, " 用户最喜欢的颜色是绿色 ", ["颜色", "Green"], version_of(ref.path.read_bytes()), now=NOW
    )
    assert version == version_of(ref.path.read_bytes())
    stored = raw_doc(ref)["entries"][0]
    assert stored["id"] == entry.id == COLOR
    assert (stored["content"], stored["keywords"]) == ("用户最喜欢的颜色是绿色", ["颜色", "green"])
    assert (stored["created_at"], stored["updated_at"]) == ("2026-11-22T01:38:15.103Z", STAMP)
    assert stored["source_trace_id"] == "d546e014-daf7-48eb-a8fb-85b6f4839cd9"
    assert raw_doc(ref)["updated_at"] == STAMP
    assert read(ref).items[0].id == COLOR


def test_editing_to_the_content_of_another_entry_is_refused(ref: StoreRef) -> None:
    before = ref.path.read_bytes()
    with pytest.raises(StoreError, match=MERGED):
        edit_entry(
            ref, COLOR, "USER PREFERS concise answers with bullet points", [], version_of(before), now=NOW
        )
    assert ref.path.read_bytes() == before


def test_deleting_removes_that_entry_only(ref: StoreRef) -> None:
    before = raw_doc(ref)
    version = delete_entry(ref, MERGED, version_of(ref.path.read_bytes()), now=NOW)
    after = raw_doc(ref)
    assert [e for e in before["entries"] if e["id"] != MERGED] == after["entries"]
    assert after["updated_at"] == STAMP
    assert version == version_of(ref.path.read_bytes())


@pytest.mark.parametrize("action", ["edit", "delete"])
def test_an_unknown_id_is_refused(ref: StoreRef, action: str) -> None:
    before = ref.path.read_bytes()
    with pytest.raises(StoreError, match="no memory entry"):
        if action == "edit":
            edit_entry(ref, "mem-nope", "x", [], version_of(before), now=NOW)
        else:
            delete_entry(ref, "mem-nope", version_of(before), now=NOW)
    assert ref.path.read_bytes() == before


@pytest.mark.parametrize("action", ["add", "edit", "delete"])
def test_a_stale_edit_raises_stale_edit_and_leaves_the_file_byte_for_byte_unchanged(
    ref: StoreRef, action: str
) -> None:
    seen = read(ref)
    add_entry(ref, "written by the gateway meanwhile", [], seen.version, now=NOW)
    current = ref.path.read_bytes()
    with pytest.raises(StaleEdit) as caught:
        if action == "add":
            add_entry(ref, "late", [], seen.version, now=NOW)
        elif action == "edit":
            edit_entry(ref, COLOR, "late", [], seen.version, now=NOW)
        else:
            delete_entry(ref, COLOR, seen.version, now=NOW)
    assert ref.path.read_bytes() == current
    assert caught.value.current_version == version_of(current)
    assert caught.value.current_text == read(ref).text


def test_an_interrupted_write_leaves_the_original_intact_and_no_temp_file(
    ref: StoreRef, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = ref.path.read_bytes()

    def crash(src: str, dst: str) -> None:
        raise OSError("disk pulled")

    monkeypatch.setattr(files.os, "replace", crash)
    with pytest.raises(OSError, match="disk pulled"):
        add_entry(ref, "never lands", [], version_of(before), now=NOW)
    assert ref.path.read_bytes() == before
    assert os.listdir(ref.path.parent) == ["memory.json"]


def test_adding_to_a_missing_file_creates_it_as_the_gateway_would(tmp_path: Path) -> None:
    (tmp_path / "data" / "long-term-memory").mkdir(parents=True)
    (ref,) = discover(tmp_path)
    assert ref.note and read(ref).version == "missing" and read(ref).items == []
    entry, _ = add_entry(ref, "first fact", ["one"], "missing", now=NOW)
    doc = raw_doc(ref)
    assert list(doc) == ["version", "updated_at", "entries"]
    assert (doc["version"], doc["updated_at"], [e["id"] for e in doc["entries"]]) == (1, STAMP, [entry.id])


def test_timestamps_are_utc_with_milliseconds_and_z() -> None:
    shanghai = timezone(timedelta(hours=8))
    assert js_iso(datetime(2026, 11, 23, 12, 5, 6, 999999, tzinfo=shanghai)) == "2026-11-23T04:05:06.999Z"
    assert js_iso(datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05.000Z"


def test_the_module_is_plain_python() -> None:
    assert "django" not in Path(yachiyo_memory.__file__).read_text()
