"""The nanobot reader on real 0.3.5 and 0.1.4 session files and on the damage files can carry."""

from __future__ import annotations

import json
import shutil
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tapeview.sources import nanobot
from tapeview.sources.model import TapeNotFound
from tapeview.sources.nanobot_files import storage_key, workspace_of

FIXTURES = Path(__file__).parent.parent / "fixtures" / "nanobot"
NS = "b8ca9e09c12a8b370fe81503daa78f45"
TELEGRAM = f"sessions/{NS}/dGVsZWdyYW06ODEyMzQ1Njc4OQ.jsonl"
DISCORD = f"sessions/{NS}/ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy.jsonl"
CLI = f"sessions/{NS}/Y2xpOmRpcmVjdA.jsonl"
DREAM = f"sessions/{NS}/ZHJlYW06MjAyNjExMTgtMjExMTQ0.jsonl"
LEGACY = (
    "sessions/cli_direct.jsonl",
    "sessions/discord_1187654321098765432.jsonl",
    "sessions/telegram_8123456789.jsonl",
)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real 0.3.5 data directory; its config names ~/.nanobot/workspace, absent from this home."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return Path(shutil.copytree(FIXTURES / "current", tmp_path / "current"))


@pytest.fixture
def legacy_workspace(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / "legacy-0.1.4" / "workspace", tmp_path / "workspace"))


def sample(rel: str) -> Path:
    return FIXTURES / ("current" if rel.startswith(f"sessions/{NS}") else "legacy-0.1.4/workspace") / rel


def entries(path: Path) -> list:
    return list(nanobot.scan(path))


def write(path: Path, *lines: dict | bytes) -> Path:
    """A session file from records (dumped as nanobot does) or raw bytes taken as they are."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(
        b"".join(
            line if isinstance(line, bytes) else json.dumps(line, ensure_ascii=False).encode() + b"\n"
            for line in lines
        )
    )
    return path


def meta(key: str = "telegram:1", **fields) -> dict:
    return {
        "_type": "metadata",
        "key": key,
        "created_at": "2026-11-10T08:00:00",
        "updated_at": "2026-11-10T09:00:00",
        "metadata": {},
        **fields,
    }


def user(text: str, **extra) -> dict:
    return {"role": "user", "content": text, "timestamp": "2026-11-10T08:00:01", **extra}


def assistant(text: str | None, **extra) -> dict:
    return {"role": "assistant", "content": text, "timestamp": "2026-11-10T08:00:02", **extra}


def call(call_id: str, name: str = "exec") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def result(call_id: str, text: str = "ok") -> dict:
    return {
        "role": "tool",
        "tool_call_id": call_id,
        "name": "exec",
        "content": text,
        "timestamp": "2026-11-10T08:00:03",
    }


# Finding the files


def test_detect_recognises_a_data_directory_and_an_old_workspace(
    data_dir: Path, legacy_workspace: Path
) -> None:
    assert nanobot.detect(data_dir)
    assert nanobot.detect(legacy_workspace)


def test_detect_rejects_folders_without_sessions(tmp_path: Path) -> None:
    write(tmp_path / "a__b.jsonl", meta())
    assert not nanobot.detect(tmp_path)
    assert not nanobot.detect(tmp_path / "missing")


def test_sessions_are_labelled_with_their_keys(data_dir: Path) -> None:
    found = {t.key: t for t in nanobot.discover(data_dir)}
    assert {k: t.label for k, t in found.items()} == {
        TELEGRAM: "telegram:8123456789",
        DISCORD: "discord:1187654321098765432",
        CLI: "cli:direct",
        DREAM: "dream:20261118-211144",
    }
    assert all(not t.append_only and t.role == "tape" and t.note == "" for t in found.values())
    assert found[TELEGRAM].name == "dGVsZWdyYW06ODEyMzQ1Njc4OQ"


def test_config_workspace_missing_on_this_host_falls_back_to_the_folder_beside_config(data_dir: Path) -> None:
    assert workspace_of(data_dir) == data_dir / "workspace"


def test_configured_workspace_is_used_when_it_is_bound_to_this_data_directory(
    data_dir: Path, tmp_path: Path
) -> None:
    elsewhere = shutil.copytree(data_dir / "workspace", tmp_path / "elsewhere")
    config = json.loads((data_dir / "config.json").read_text())
    config["agents"]["defaults"]["workspace"] = str(elsewhere)
    (data_dir / "config.json").write_text(json.dumps(config))
    assert workspace_of(data_dir) == elsewhere
    (elsewhere / ".nanobot" / "workspace-id").write_text("0" * 32 + "\n")  # another install's workspace
    assert workspace_of(data_dir) == data_dir / "workspace"


def test_temp_lock_checkpoint_and_index_files_are_not_sessions(data_dir: Path) -> None:
    ns = data_dir / "sessions" / NS
    for name in (
        ".dGVsZWdyYW06ODEyMzQ1Njc4OQ.jsonl.0123456789abcdef.tmp",
        "dGVsZWdyYW06ODEyMzQ1Njc4OQ.jsonl.tmp",
        "dGVsZWdyYW06ODEyMzQ1Njc4OQ.checkpoint.json",
        ".webui_session_index.json",
        ".hidden.jsonl",
    ):
        (ns / name).write_text("{}\n")
    found = {t.key: t for t in nanobot.discover(data_dir)}
    assert set(found) == {TELEGRAM, DISCORD, CLI, DREAM}
    assert "interrupted" in found[TELEGRAM].note


def test_files_nanobot_no_longer_loads_are_found_with_a_note(data_dir: Path) -> None:
    ns = data_dir / "sessions" / NS
    shutil.copy(sample(LEGACY[2]), ns / "telegram_8123456789.jsonl")  # orphaned by the upgrade
    write(data_dir / "sessions" / "telegram_55.jsonl", {"_type": "metadata", "metadata": {}}, user("hi"))
    conflict = (
        ns
        / ".migration-conflicts"
        / "ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy.workspace.0123456789ab.cafe0001.jsonl"
    )
    conflict.parent.mkdir()
    shutil.copy(sample(DISCORD), conflict)
    write(data_dir / "workspace" / "sessions" / "cli_direct.jsonl", meta("cli:direct"))
    found = {t.key: t for t in nanobot.discover(data_dir)}

    orphan = found[f"sessions/{NS}/telegram_8123456789.jsonl"]
    assert orphan.label == "telegram:8123456789"
    assert "no longer loads" in orphan.note
    assert (orphan.role, orphan.owner) == ("archive", TELEGRAM)

    old_global = found["sessions/telegram_55.jsonl"]
    assert old_global.label == "telegram:55"
    assert "0.1.3" in old_global.note and "guessed" in old_global.note

    kept = found[f"sessions/{NS}/.migration-conflicts/{conflict.name}"]
    assert kept.label == "discord:1187654321098765432"
    assert (kept.role, kept.owner) == ("archive", DISCORD)
    assert "conflict" in kept.note and "workspace copy" in kept.note

    in_workspace = found["workspace/sessions/cli_direct.jsonl"]
    assert in_workspace.label == "cli:direct"
    assert "never loads it" in in_workspace.note


def test_a_file_named_for_another_key_than_its_metadata_is_not_loaded(data_dir: Path) -> None:
    ns = data_dir / "sessions" / NS
    write(ns / f"{storage_key('slack:C1:1.2')}.jsonl", meta("slack:C9:9.9"), user("hi"))
    found = {t.label: t for t in nanobot.discover(data_dir)}
    assert "slack:C1:1.2" in found["slack:C9:9.9"].note
    assert "no longer loads" in found["slack:C9:9.9"].note


def test_legacy_workspace_sessions_are_found_with_their_last_consolidated(legacy_workspace: Path) -> None:
    found = {t.key: t for t in nanobot.discover(legacy_workspace)}
    assert {k: t.label for k, t in found.items()} == {
        LEGACY[0]: "cli:direct",
        LEGACY[1]: "discord:1187654321098765432",
        LEGACY[2]: "telegram:8123456789",
    }
    assert all("old layout" in t.note for t in found.values())
    discord = entries(found[LEGACY[1]].path)
    telegram = entries(found[LEGACY[2]].path)
    assert nanobot.archive_offset(discord) == 432
    assert nanobot.archive_offset(telegram) == 1127
    assert [e.id for e in discord if e.pos == nanobot.archive_boundary(discord)] == [432]


# Reading the records


@pytest.mark.parametrize("rel", [TELEGRAM, DISCORD, CLI, DREAM, *LEGACY])
def test_every_message_row_appears_in_scan_order_with_its_kind_and_role(rel: str) -> None:
    path = sample(rel)
    data = path.read_bytes()
    found = entries(path)
    lines = data.split(b"\n")[:-1]
    assert [e.pos for e in found] == list(range(1, len(lines) + 1))
    index = 0
    for e, line in zip(found, lines, strict=True):
        record = json.loads(line)
        assert e.readable and e.payload == record
        assert data[e.offset : e.offset + e.length] == line + b"\n"
        if record.get("_type") == "metadata":
            assert (e.kind, e.id, e.name) == ("metadata", None, record["key"])
            continue
        assert e.id == index
        index += 1
        if record["role"] == "assistant" and record.get("tool_calls"):
            assert e.kind == "tool_call"
        elif record["role"] == "tool":
            assert (e.kind, e.name) == ("tool_result", record["name"])
        else:
            assert (e.kind, e.name) == ("message", record["role"])


@pytest.mark.parametrize("rel", [TELEGRAM, DISCORD, DREAM, *LEGACY[1:]])
def test_tool_calls_pair_with_their_results_by_call_id(rel: str) -> None:
    found = entries(sample(rel))
    calls = {c["id"]: c for e in found if e.kind == "tool_call" for c in nanobot.tool_calls(e)}
    results = [r for e in found if e.kind == "tool_result" for r in nanobot.tool_results(e)]
    assert calls and results
    assert all(c["name"] != "?" and isinstance(c["arguments"], str) for c in calls.values())
    assert {r["call_id"] for r in results} <= set(calls)


def test_parallel_calls_keep_their_own_results_and_the_failure_is_an_error() -> None:
    found = entries(sample(TELEGRAM))
    parallel = next(e for e in found if e.kind == "tool_call" and len(nanobot.tool_calls(e)) == 2)
    ids = [c["id"] for c in nanobot.tool_calls(parallel)]
    after = [nanobot.tool_results(e)[0] for e in found if e.pos in (parallel.pos + 1, parallel.pos + 2)]
    assert [r["call_id"] for r in after] == ids
    assert [r["is_error"] for r in after] == [False, True]
    assert parallel.name == "read_file, read_file"


def test_metadata_record_is_shown_with_its_usage_and_not_counted_as_a_message() -> None:
    first = entries(sample(DISCORD))[0]
    assert (first.kind, first.id, first.context) == ("metadata", None, False)
    assert first.payload["last_archived"] == 14
    assert (first.prompt_tokens, first.cached_tokens) == (32984, 26387)
    assert first.date is not None and first.date.tzinfo is not None


def test_naive_timestamps_are_read_as_local_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(
        tmp_path / "s.jsonl",
        meta(),
        user("winter"),
        {**user("summer"), "timestamp": "2026-07-01T12:00"},
        {**user("no time"), "timestamp": None},
        {**user("bad"), "timestamp": "yesterday"},
    )
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        found = entries(path)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert found[1].date.utcoffset() == timedelta(hours=1)
    assert found[1].date.hour == 8
    assert found[2].date.utcoffset() == timedelta(hours=2)
    assert found[3].date is None and found[3].problem == ""
    assert found[4].date is None and "unreadable timestamp" in found[4].problem


def test_flags_mark_commands_deliveries_media_and_reasoning() -> None:
    found = {e.pos: e for e in entries(sample(TELEGRAM))}
    assert found[2].meta["flags"] == ["command"] and not found[2].context
    assert found[14].meta["flags"] == ["media"]
    assert found[18].meta["flags"] == ["persisted_output"]
    assert found[22].meta["flags"] == ["reasoning"]
    assert found[25].meta["flags"] == ["channel_delivery"] and found[25].context


def test_hidden_markers_and_automation_turns_are_flagged(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        meta(),
        user("Continue the active task from the working-memory checkpoint above.", _hidden_history=True),
        user("cron", _automation_turn={"kind": "cron"}),
        user("old cron", _cron_turn=True),
        user(
            "hi\n\n[Runtime Context — metadata only, not instructions]\nx\n[/Runtime Context]",
            _runtime_context={"version": 1, "suffix": "x"},
        ),
        assistant("done", injected_event="subagent_result", subagent_task_id="t1"),
        assistant(""),
        assistant("legacy", tools_used=None),
    )
    found = entries(path)
    assert [e.meta["flags"] for e in found[1:]] == [
        ["checkpoint"],
        ["automation"],
        ["automation"],
        ["runtime_context"],
        ["injected_event"],
        [],
        ["legacy_tools_used"],
    ]
    assert found[1].kind == "message" and found[1].context
    assert not found[6].context  # an empty assistant row is never replayed


def test_provider_state_is_an_opaque_event_that_is_never_shown(tmp_path: Path) -> None:
    state = {
        "_type": "provider_state",
        "state": {"kind": "responses", "payload": {"enc": "SECRET-REASONING"}},
    }
    path = write(
        tmp_path / "s.jsonl", meta(), state, user("hi"), b'{"_type": "provider_state", "state": {"SECRET\n'
    )
    found = entries(path)
    event = found[1]
    assert (event.kind, event.name, event.id, event.context) == ("event", "provider_state", None, False)
    assert "opaque" in event.payload["data"]
    assert found[2].id == 0
    assert not found[3].readable
    assert "SECRET" not in repr(found)


# Damage


def test_a_line_with_u2028_stays_one_entry(tmp_path: Path) -> None:
    text = "first\u2028second\u2029third\x85fourth"
    path = write(tmp_path / "s.jsonl", meta(), user(text), assistant("ok"))
    assert len(path.read_text().splitlines()) > 3  # the trap the format doc warns about
    found = entries(path)
    assert [e.kind for e in found] == ["metadata", "message", "message"]
    assert found[1].payload["content"] == text


def test_a_malformed_line_becomes_unreadable_without_losing_the_others(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        meta(),
        user("one"),
        b'{"role": "assistant", "content": \n',
        b"\n",
        assistant("two"),
    )
    found = entries(path)
    assert [(e.pos, e.kind, e.id) for e in found] == [
        (1, "metadata", None),
        (2, "message", 0),
        (3, "unreadable", None),
        (5, "message", 1),
    ]
    assert found[2].problem == "malformed JSON" and found[2].preview.startswith('{"role"')


def test_a_truncated_file_ends_with_an_unreadable_entry(tmp_path: Path) -> None:
    data = sample(DISCORD).read_bytes()
    cut = write(tmp_path / "s.jsonl", data[: len(data) - 40])
    whole, found = entries(sample(DISCORD)), entries(cut)
    assert found[:-1] == whole[:-1]
    assert not found[-1].readable and "ends mid-record" in found[-1].problem
    assert found[-1].length == whole[-1].length - 40


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b'{"role": "user", "content": "\xff\xfe"}\n', "invalid UTF-8"),
        (b"[1, 2]\n", "not a JSON object"),
        (b'"text"\n', "not a JSON object"),
        (b"42\n", "not a JSON object"),
    ],
)
def test_lines_that_are_not_records_are_unreadable(tmp_path: Path, line: bytes, problem: str) -> None:
    found = entries(write(tmp_path / "s.jsonl", meta(), line, user("after")))
    assert problem in found[1].problem and found[1].kind == "unreadable"
    assert found[2].id == 0


def test_json_the_standard_library_accepts_is_read_like_nanobot_reads_it(tmp_path: Path) -> None:
    found = entries(write(tmp_path / "s.jsonl", meta(), b'{"role": "user", "content": "x", "n": NaN}\n'))
    assert found[1].readable and found[1].name == "user"


def test_the_preview_of_an_unreadable_line_is_bounded(tmp_path: Path) -> None:
    found = entries(write(tmp_path / "s.jsonl", b"{" + b"x" * 50_000 + b"\n"))
    assert 0 < len(found[0].preview) < 1_000


def test_a_missing_file_is_tape_not_found(tmp_path: Path) -> None:
    with pytest.raises(TapeNotFound):
        entries(tmp_path / "gone.jsonl")
    with pytest.raises(TapeNotFound):
        nanobot.read_entries(tmp_path / "gone.jsonl", [(1, 0, 10)])


def test_read_entries_gives_what_scan_gives_at_those_places() -> None:
    whole = entries(sample(TELEGRAM))
    picked = [whole[i] for i in (0, 5, 20)]
    assert nanobot.read_entries(sample(TELEGRAM), [(e.pos, e.offset, e.length) for e in picked]) == picked
    assert nanobot.unfinished_tail(sample(TELEGRAM), 0, 1) is None


# The archive boundary and what nanobot replays


def test_the_discord_boundary_lands_on_the_tool_row_right_after_its_call() -> None:
    found = entries(sample(DISCORD))
    boundary = nanobot.archive_boundary(found)
    at = next(e for e in found if e.pos == boundary)
    before = next(e for e in found if e.pos == boundary - 1)
    assert (at.kind, at.id) == ("tool_result", 14)
    assert before.kind == "tool_call"
    assert at.payload["tool_call_id"] in [c["id"] for c in nanobot.tool_calls(before)]


def test_the_discord_context_skips_the_orphan_tool_result() -> None:
    found = entries(sample(DISCORD))
    orphan = next(e for e in found if e.id == 14)
    context = nanobot.context_messages(found)
    assert context[0].role == "user" and context[0].source_pos > orphan.pos
    assert orphan.payload["tool_call_id"] not in {m.tool_call_id for m in context}
    declared = set()
    for m in context:
        declared |= {c["id"] for c in m.tool_calls or []}
        assert m.role != "tool" or m.tool_call_id in declared


def test_the_cli_session_emptied_by_new_has_no_messages(legacy_workspace: Path) -> None:
    assert [e.kind for e in entries(legacy_workspace / LEGACY[0])] == ["metadata"]
    current = entries(sample(CLI))
    assert all("command" in e.meta["flags"] for e in current if e.id is not None)  # only /dream since
    assert nanobot.context_messages(current) == []
    assert nanobot.archive_boundary(current) is None


def test_context_keeps_only_the_keys_nanobot_replays() -> None:
    context = nanobot.context_messages(entries(sample(TELEGRAM)))
    assert context[0].content == "What's in my workspace right now?"  # /help and its reply skipped
    image = next(m for m in context if m.source_pos == 14)
    assert image.content.endswith(
        "\n[image: /home/ana/.nanobot/media/telegram/AgACAgIAAxkBAAIBQ2c_photo.png]"
    )
    call_row = next(m for m in context if m.source_pos == 5)
    assert call_row.tool_calls[0]["function"]["name"] == "list_dir"
    assert context[-1].source_pos == 25  # the channel delivery at the end is replayed


def test_replay_resumes_at_the_checkpoint_marker(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        meta(last_archived=4, last_consolidated=4, metadata={"_last_summary": {"text": "so far"}}),
        user("one"),
        assistant("", tool_calls=[call("c1")]),
        result("c1"),
        assistant("done"),
        user("Continue the active task from the working-memory checkpoint above.", _hidden_history=True),
        assistant("continuing"),
    )
    found = entries(path)
    assert nanobot.archive_boundary(found) == 6
    assert [m.source_pos for m in nanobot.context_messages(found)] == [6, 7]


def test_replay_starts_at_a_channel_delivery_just_before_the_first_user_row(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        meta(last_archived=1),
        user("zero"),
        assistant("one"),
        assistant("backup failed", _channel_delivery=True),
        user("why?"),
        assistant("because"),
    )
    assert [m.content for m in nanobot.context_messages(entries(path))] == [
        "backup failed",
        "why?",
        "because",
    ]


def test_replay_drops_leading_orphan_results_commands_and_empty_replies(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        meta(),
        user("go"),
        result("never-declared"),
        assistant("", tool_calls=[call("c2")]),
        result("c2"),
        user("/status", _command=True),
        assistant("status…", _command=True),
        assistant("   "),
        assistant(
            "[Message Time: 2026-11-10 08:00]\nanswer\n[image: /tmp/x.png]",
            reasoning_content="why",
            latency_ms=5,
        ),
    )
    context = nanobot.context_messages(entries(path))
    assert [(m.role, m.source_pos) for m in context] == [("assistant", 4), ("tool", 5), ("assistant", 9)]
    assert context[-1].content == "answer"
    assert context[1].tool_call_id == "c2" and context[1].name == "exec"


@pytest.mark.parametrize(
    ("fields", "offset"),
    [
        ({"last_archived": 2, "last_consolidated": 1}, 2),
        ({"last_consolidated": 1}, 1),
        ({"last_archived": "2", "last_consolidated": 1}, 1),
        ({"last_archived": True}, 0),
        ({"last_archived": 99}, 0),
        ({"last_archived": -1}, 0),
        ({}, 0),
    ],
)
def test_archive_offsets_are_read_and_reset_as_nanobot_does(
    tmp_path: Path, fields: dict, offset: int
) -> None:
    path = write(tmp_path / "s.jsonl", meta(**fields), user("a"), assistant("b"), user("c"))
    assert nanobot.archive_offset(entries(path)) == offset


def test_the_boundary_after_everything_archived_is_past_the_last_entry(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", meta(last_archived=2), user("a"), assistant("b"))
    found = entries(path)
    assert nanobot.archive_boundary(found) == 4
    assert nanobot.context_messages(found) == []


def test_session_label_comes_from_the_metadata_or_the_file_name() -> None:
    first, second = entries(sample(DISCORD))[:2]
    assert nanobot.session_label("whatever", first) == "discord:1187654321098765432"
    assert nanobot.session_label("Y2xpOmRpcmVjdA", second) == "cli:direct"
    assert nanobot.session_label("telegram_8123456789", second) is None


@pytest.mark.parametrize("depth", [300, 1_000, 10_000])
def test_deeply_nested_records_never_crash_the_reader_or_the_replay(tmp_path: Path, depth: int) -> None:
    deep = "[" * depth + "]" * depth
    path = tmp_path / "Y2xpOmRpcmVjdA.jsonl"
    path.write_text(
        '{"_type": "metadata", "key": "cli:direct"}\n'
        f'{{"role": "user", "content": {deep}}}\n'
        f'{{"role": "assistant", "content": "ok", "tool_calls": [{{"id": "c", "function": {{"name": "f", "arguments": {deep}}}}}]}}\n'
    )

    found = entries(path)
    messages = nanobot.context_messages(found)

    readable = depth < 1_024
    assert [e.readable for e in found] == [True, readable, readable]
    assert all(e.problem == "malformed JSON" for e in found if not e.readable)
    assert len(messages) == (2 if readable else 0)
    assert all(isinstance(m.chars, int) for m in messages)
