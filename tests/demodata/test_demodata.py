"""The demo writers make files that the project's own readers take as real agent data, byte-stable per `now`."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

from tapeview.demodata import araliya as araliya_demo
from tapeview.demodata import nanobot as nanobot_demo
from tapeview.demodata import yachiyo as yachiyo_demo
from tapeview.sources import araliya, nanobot, yachiyo
from tapeview.sources.model import Entry

NOW = datetime(2026, 11, 22, 9, 30, 15, 123456, tzinfo=UTC)
TELEGRAM, DISCORD, CLI = "telegram:7045512398", "discord:1290457781234567890", "cli:direct"
MS_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
WRITERS = [nanobot_demo, yachiyo_demo, araliya_demo]


def sessions(reader: ModuleType, root: Path) -> dict[str, list[Entry]]:
    """Every session the reader discovers, by its label, with the entries it scans."""
    return {t.label: list(reader.scan(t.path)) for t in reader.discover(root)}


def files(root: Path) -> dict[str, bytes]:
    """Each file's bytes by relative path, with `root` itself (named in config and tool output) masked."""
    here = str(root).encode()
    return {
        p.relative_to(root).as_posix(): p.read_bytes().replace(here, b"<root>")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def nanobot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nanobot")
    nanobot_demo.write(root, NOW)
    return root


@pytest.fixture(scope="module")
def yachiyo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("yachiyo")
    yachiyo_demo.write(root, NOW)
    return root


@pytest.fixture(scope="module")
def araliya_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("araliya")
    araliya_demo.write(root, NOW)
    return root


@pytest.mark.parametrize("writer", WRITERS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_the_same_now_writes_the_same_bytes(writer: ModuleType, tmp_path: Path) -> None:
    first, second = writer.write(tmp_path / "a", NOW), writer.write(tmp_path / "b", NOW)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert [p.relative_to(tmp_path / "a") for p in first] == [p.relative_to(tmp_path / "b") for p in second]


@pytest.mark.parametrize("writer", WRITERS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_file_written_is_returned(writer: ModuleType, tmp_path: Path) -> None:
    written = writer.write(tmp_path, NOW)
    assert sorted(written) == sorted(p for p in tmp_path.rglob("*") if p.is_file())


# nanobot


def test_nanobot_sessions_are_discovered_by_their_session_keys(nanobot_dir: Path) -> None:
    found = nanobot.discover(nanobot_dir)
    [dream] = [t.label for t in found if t.label.startswith("dream:")]
    assert re.fullmatch(r"dream:\d{8}-\d{6}", dream)
    assert sorted(t.label for t in found) == sorted([CLI, DISCORD, TELEGRAM, dream])
    # Canonical base64url names: nanobot 0.3.5 loads every one of them.
    assert all(t.role == "tape" and t.note == "" for t in found)
    assert nanobot.detect(nanobot_dir)


def test_no_nanobot_entry_is_unreadable_or_odd(nanobot_dir: Path) -> None:
    for label, entries in sessions(nanobot, nanobot_dir).items():
        assert entries[0].kind == "metadata", label
        assert all(e.readable and not e.problem for e in entries), label


def test_every_nanobot_line_is_written_as_nanobot_dumps_it(nanobot_dir: Path) -> None:
    for path in nanobot_dir.glob("sessions/*/*.jsonl"):
        text = path.read_text(encoding="utf-8")
        assert text.endswith("\n")
        for line in text.split("\n")[:-1]:
            assert line == json.dumps(json.loads(line), ensure_ascii=False)


def test_nanobot_metadata_line_has_the_0_3_5_layout(nanobot_dir: Path) -> None:
    for path in nanobot_dir.glob("sessions/*/*.jsonl"):
        head = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[0])
        assert list(head) == [
            "_type", "key", "created_at", "updated_at", "metadata", "last_archived", "last_consolidated",
        ]  # fmt: skip
        assert head["last_archived"] == head["last_consolidated"]
        assert datetime.fromisoformat(head["updated_at"]).tzinfo is None
        if not head["key"].startswith("dream:"):
            assert "_last_usage" in head["metadata"]


def test_telegram_chat_has_a_failed_parallel_call_reasoning_and_an_image(nanobot_dir: Path) -> None:
    entries = sessions(nanobot, nanobot_dir)[TELEGRAM]
    kinds = {e.kind for e in entries}
    assert {"tool_call", "tool_result", "message"} <= kinds
    parallel = [e for e in entries if e.kind == "tool_call" and len(nanobot.tool_calls(e)) == 2]
    ids = {c["id"] for c in nanobot.tool_calls(parallel[0])}
    failed = [e for e in entries if e.is_error]
    assert len(failed) == 1 and nanobot.tool_results(failed[0])[0]["call_id"] in ids
    assert any("reasoning" in e.meta.get("flags", []) for e in entries)
    [photo] = [e for e in entries if "media" in e.meta.get("flags", [])]
    assert Path(photo.payload["media"][0]).is_file()
    assert any("channel_delivery" in e.meta.get("flags", []) for e in entries)


def test_discord_archive_boundary_is_the_summary_checkpoint_it_points_at(nanobot_dir: Path) -> None:
    entries = sessions(nanobot, nanobot_dir)[DISCORD]
    head = entries[0].payload
    archived = head["last_archived"]
    assert 0 < archived < sum(e.id is not None for e in entries)
    boundary = nanobot.archive_boundary(entries)
    [marker] = [e for e in entries if e.pos == boundary]
    assert marker.id == archived and "checkpoint" in marker.meta["flags"]
    assert head["metadata"]["_last_summary"]["text"]
    # What the model still sees starts at the checkpoint.
    assert min(m.source_pos for m in nanobot.context_messages(entries)) == boundary


def test_cli_session_keeps_the_help_command_and_its_reply(nanobot_dir: Path) -> None:
    entries = sessions(nanobot, nanobot_dir)[CLI]
    commands = [e for e in entries if "command" in e.meta.get("flags", [])]
    assert [e.name for e in commands] == ["user", "assistant"]
    assert commands[0].payload["content"] == "/help"
    assert commands[1].payload["content"].startswith("🐈 nanobot commands:\n/new — ")
    assert any(e.kind == "tool_result" for e in entries)


def test_dream_session_edits_the_memory_files(nanobot_dir: Path) -> None:
    [entries] = [v for k, v in sessions(nanobot, nanobot_dir).items() if k.startswith("dream:")]
    edited = {json.loads(c["arguments"])["path"] for e in entries for c in nanobot.tool_calls(e)}
    assert edited == {"memory/MEMORY.md", "USER.md", "skills/proxmox-backup-check/SKILL.md"}
    assert all((nanobot_dir / "workspace" / p).is_file() for p in edited)


def test_workspace_config_and_session_folder_point_at_each_other(nanobot_dir: Path) -> None:
    workspace = nanobot_dir / "workspace"
    config = json.loads((nanobot_dir / "config.json").read_text())
    assert config["agents"]["defaults"]["workspace"] == str(workspace)
    wid = (workspace / ".nanobot" / "workspace-id").read_text()
    assert re.fullmatch(r"[0-9a-f]{32}\n", wid)
    assert (nanobot_dir / "sessions" / wid.strip() / ".workspace").read_text() == f"{workspace}\n"
    for name in ("AGENTS.md", "SOUL.md", "USER.md", "HEARTBEAT.md", "memory/MEMORY.md"):
        assert (workspace / name).read_text().strip()


def test_history_journal_has_rising_cursors_and_two_entries_waiting_for_dream(nanobot_dir: Path) -> None:
    memory = nanobot_dir / "workspace" / "memory"
    lines = (memory / "history.jsonl").read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""
    history = [json.loads(line) for line in lines[:-1]]
    assert 15 <= len(history) <= 30
    assert [h["cursor"] for h in history] == list(range(1, len(history) + 1))
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", h["timestamp"]) for h in history)
    assert [h["timestamp"] for h in history] == sorted(h["timestamp"] for h in history)
    assert (memory / ".cursor").read_text() == str(len(history))
    assert (memory / ".dream_cursor").read_text() == str(len(history) - 2)
    assert any(h.get("session_key") == DISCORD for h in history)


# yachiyo


def test_yachiyo_sessions_are_discovered_by_title_and_id(yachiyo_dir: Path) -> None:
    found = yachiyo.discover(yachiyo_dir)
    assert [t.label for t in found] == [
        "CI keeps failing on the websocket reconn… · sess-ci-flaky-ws",
        "帮我回忆一下前端重构的约定：组件命名和状态管理怎么定的？ · proj/前端重构 #2",
        "Run the gateway test suite and tell me w… · sess-review-low",
    ]
    assert all(t.note == "" for t in found)
    assert found[1].path.name == "proj%2F%E5%89%8D%E7%AB%AF%E9%87%8D%E6%9E%84%20%232.json"


def test_yachiyo_sessions_read_without_unreadable_entries_and_with_tool_traffic(yachiyo_dir: Path) -> None:
    for label, entries in sessions(yachiyo, yachiyo_dir).items():
        assert all(e.readable for e in entries), label
        assert {"message", "anchor", "tool_call", "tool_result"} <= {e.kind for e in entries}, label


def test_low_permission_session_shows_the_denied_tool_call(yachiyo_dir: Path) -> None:
    entries = sessions(yachiyo, yachiyo_dir)["Run the gateway test suite and tell me w… · sess-review-low"]
    [failed] = [e for e in entries if e.is_error]
    [result] = yachiyo.tool_results(failed)
    assert result["content"]["code"] == "PERMISSION_DENIED" and result["is_error"]
    assert any(e.name == "tool.error" for e in entries)


def test_streamed_deltas_build_each_assistant_message(yachiyo_dir: Path) -> None:
    for entries in sessions(yachiyo, yachiyo_dir).values():
        answers = [e.payload["content"] for e in entries if e.kind == "message" and e.name == "assistant"]
        streamed = [e.payload["text"] for e in entries if e.name == "llm.stream.delta"]
        assert streamed == answers


def test_yachiyo_files_are_in_the_gateway_json_style(yachiyo_dir: Path) -> None:
    paths = sorted(yachiyo_dir.rglob("*.json"))
    assert len(paths) == 5
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert text == json.dumps(json.loads(text), ensure_ascii=False, indent=2)  # no newline at the end
        stamps = re.findall(r'"(?:created_at|updated_at)": "([^"]*)"', text)
        assert stamps and all(MS_STAMP.match(s) for s in stamps), path.name


def test_yachiyo_index_summaries_match_their_session_files(yachiyo_dir: Path) -> None:
    store = yachiyo_dir / "session-store"
    index = json.loads((store / "index.json").read_text(encoding="utf-8"))["sessions"]
    for found in yachiyo.discover(yachiyo_dir):
        doc = json.loads(found.path.read_text(encoding="utf-8"))
        summary = index[doc["session_id"]]
        assert list(doc) == [
            "session_id", "title", "created_at", "updated_at", "messages", "events", "runs", "settings", "memory",
        ]  # fmt: skip
        assert (summary["message_count"], summary["event_count"], summary["run_count"]) == (
            len(doc["messages"]), len(doc["events"]), len(doc["runs"]),
        )  # fmt: skip
        assert summary["updated_at"] == doc["updated_at"] and summary["title"] == doc["title"]
        assert summary["last_output_preview"] == doc["runs"][-1]["output"][:120]


def test_long_term_memory_has_keywords_provenance_and_one_merged_duplicate(yachiyo_dir: Path) -> None:
    store = json.loads((yachiyo_dir / "long-term-memory" / "memory.json").read_text(encoding="utf-8"))
    entries = store["entries"]
    assert 10 <= len(entries) <= 20
    assert all(e["keywords"] and e["keywords"] == [k.lower() for k in e["keywords"]] for e in entries)
    assert all(e["id"].startswith("mem-") for e in entries)
    assert sum(e["source_session_id"] is not None for e in entries) >= len(entries) - 1
    [merged] = [e for e in entries if e["created_at"] != e["updated_at"]]
    assert merged["source_session_id"] == "sess-ci-flaky-ws"
    assert store["updated_at"] == max(e["updated_at"] for e in entries)


# araliya


def test_araliya_sessions_are_discovered_by_id_and_agent(araliya_dir: Path) -> None:
    found = araliya.discover(araliya_dir)
    assert [t.label.split(" ", 1)[1] for t in found] == ["(chat)", "(chat)", "(no agent)"]
    assert all(UUID7.match(t.name) and t.label.startswith(t.name) for t in found)
    [identity] = araliya_dir.iterdir()
    assert re.fullmatch(r"bot-pkey[0-9a-f]{8}", identity.name)


def test_araliya_transcripts_read_cleanly_and_one_session_is_empty(araliya_dir: Path) -> None:
    read = sessions(araliya, araliya_dir)
    counts = [len(entries) for entries in read.values()]
    assert counts[-1] == 0 and all(counts[:-1])
    for entries in read.values():
        assert all(e.readable and not e.problem and e.kind == "message" for e in entries)
        assert [e.name for e in entries] == ["user", "assistant"] * (len(entries) // 2)


def test_transcripts_are_in_the_exact_append_serialisation(araliya_dir: Path) -> None:
    for found in araliya.discover(araliya_dir):
        raw = found.path.read_text(encoding="utf-8")
        again = "".join(
            f"### {e.payload['role']} \u2014 {e.payload['timestamp']}\n\n{e.payload['content']}\n\n"
            for e in araliya.scan(found.path)
        )
        assert raw == again
        assert raw == "" or raw.endswith("\n\n")


def test_one_araliya_session_keeps_working_memory_in_its_kv_store(araliya_dir: Path) -> None:
    kvs = sorted(araliya_dir.glob("*/memory/sessions/*/kv.json"))
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in kvs]
    for path, doc in zip(kvs, docs, strict=True):
        assert path.read_text(encoding="utf-8") == json.dumps(doc, ensure_ascii=False, indent=2)
        assert list(doc) == ["cap", "entries"]
        assert all(list(e) == ["key", "value", "ts"] for e in doc["entries"])
    assert sum(any(e["key"] == "working_memory" for e in d["entries"]) for d in docs) == 1
