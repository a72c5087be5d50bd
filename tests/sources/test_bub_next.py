"""Tapes in Bub's next format (CloudEvents lines) read as Bub's own reader reads them: the counts of
the samples' README (tests/fixtures/bub-next/README.md), line by line."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from tapeview.sources import bub, bub_next

NEXT = Path(__file__).resolve().parents[1] / "fixtures" / "bub-next"
OLD = Path(__file__).resolve().parents[1] / "fixtures" / "bub"
SESSION = NEXT / "session_realistic.jsonl"


def types_of(entries) -> Counter:
    return Counter(e.meta["type"][len("build.bub.") : -len(".v1")] for e in entries if e.readable)


@pytest.mark.parametrize(
    ("name", "entries", "anchors"),
    [
        ("session_realistic.jsonl", 169, 4),
        ("session_realistic__sidecar__spill.jsonl", 10, 5),
        ("reset_after_archive.jsonl", 16, 1),
        ("reset_archive_before_reset.jsonl.bak", 31, 1),
        ("reset_archive_sidecar_spill.jsonl.bak", 10, 5),
        ("crash_truncated_last_line_CRASH.jsonl", 168, 4),
    ],
)
def test_each_sample_reads_as_many_entries_and_anchors_as_bub_reads(name, entries, anchors) -> None:
    found = list(bub.scan(NEXT / name))
    assert len(found) == entries
    assert all(e.readable for e in found), [e.problem for e in found if not e.readable]
    assert sum(e.is_anchor for e in found) == anchors
    assert [e.pos for e in found] == list(range(1, entries + 1))
    assert [e.id for e in found] == [e.pos for e in found]  # position is the id


def test_a_session_reads_every_type_bub_counts() -> None:
    found = list(bub.scan(SESSION))
    types = types_of(found)
    assert types["model.started"] == 17 and types["model.completed"] == 15 and types["model.failed"] == 2
    assert types["tool.started"] == 9 and types["tool.completed"] == 8 and types["tool.failed"] == 1
    assert types["agent.invocation.started"] == 11 and types["agent.invocation.completed"] == 10
    assert types["agent.invocation.failed"] == 1
    sources = Counter(
        json.loads(line)["data"]["source"]
        for line in SESSION.read_text().splitlines()
        if '"build.bub.message.v1"' in line
    )
    roles = Counter(e.name or e.kind for e in found if e.meta["type"] == "build.bub.message.v1")
    # user 15, agent 15 (a reply, or its tool calls with their results), system 15
    assert sources == {"user": 15, "agent": 15, "system": 15}
    assert roles["user"] == 15 and roles["system"] == 15 and roles["assistant"] + roles["tool_call"] == 15


def test_anchors_have_their_names_and_state_and_the_last_is_the_last_bub_sees() -> None:
    anchors = [e for e in bub.scan(SESSION) if e.is_anchor]
    assert [a.name for a in anchors] == [
        "session/start",
        "phase/explore-done",
        "auto_handoff/context_overflow",
        "phase/implement",
    ]
    assert anchors[0].payload["state"] == {"owner": "human"}
    assert anchors[2].payload["state"]["reason"] == "context_length_exceeded"
    assert all(a.context and a.phase for a in anchors)


def test_spill_anchors_start_no_phase() -> None:
    anchors = [e for e in bub.scan(NEXT / "session_realistic__sidecar__spill.jsonl") if e.is_anchor]
    assert len(anchors) == 5 and not any(a.phase for a in anchors)
    assert anchors[-1].name.endswith("/manifest")


def test_errors_are_the_failed_calls_and_the_failed_invocation() -> None:
    errors = [e.name for e in bub.scan(SESSION) if e.is_error]
    assert Counter(errors) == {"model.failed": 2, "tool.failed": 1, "agent.invocation.failed": 1}


def test_usage_comes_from_model_completed_and_the_last_call_is_bubs_last_token_usage() -> None:
    found = list(bub.scan(SESSION))
    calls = [e for e in found if e.name == "model.completed"]
    assert len(calls) == 15 and all(e.tokens > 0 for e in calls)
    last = calls[-1]
    assert last.tokens == 2_466  # Tape.info's last_token_usage: prompt + completion of the last call
    assert (last.prompt_tokens, last.cached_tokens) == (2_460, 2_304)
    step = [e for e in found if e.payload.get("metrics")][-1]
    assert step.payload["metrics"]["prompt_tokens"] + step.payload["metrics"]["completion_tokens"] == 2_466
    assert step.meta["model_name"] == "openrouter:anthropic/claude-sonnet-4.5"


def test_tool_calls_and_their_results_come_from_the_one_agent_step() -> None:
    step = next(e for e in bub.scan(SESSION) if e.kind == "tool_call" and len(bub.tool_calls(e)) == 3)
    calls, results = bub.tool_calls(step), bub.tool_results(step)
    assert [c["name"] for c in calls] == ["fs_read", "bash", "run_tests"]
    assert [r["call_id"] for r in results] == [c["id"] for c in calls]
    assert [r["is_error"] for r in results] == [False, True, False]
    assert json.loads(calls[0]["arguments"]) == {"path": "src/parser.py"}


def test_bubcontext_decides_what_the_context_shows() -> None:
    found = list(bub.scan(SESSION))
    first_anchor = next(i for i, e in enumerate(found) if e.name == "phase/explore-done")
    after = found[:first_anchor]  # the first phase, after session/start
    messages = bub.context_messages(after[1:])
    roles = Counter(m.role for m in messages)
    assert "system" not in roles  # system prompts carry bubcontext false
    assert roles["user"] > 0 and roles["assistant"] > 0 and roles["tool"] > 0
    calls = [m for m in messages if m.tool_calls]
    tools = [m for m in messages if m.role == "tool"]
    assert {t.tool_call_id for t in tools} <= {c["id"] for m in calls for c in m.tool_calls}


def test_the_session_id_labels_the_tape_when_its_hash_is_the_names() -> None:
    entry = next(e for e in bub.scan(SESSION) if e.kind == "message")
    assert bub.session_label("f887c9f116649249__0b871d5e50e7c192", entry) == "cli:local"
    assert bub.session_label("f887c9f116649249__0000000000000000", entry) is None


def test_an_unfinished_last_line_is_no_entry_but_shown_as_unfinished() -> None:
    crash = NEXT / "crash_truncated_last_line_CRASH.jsonl"
    found = list(bub.scan(crash))
    end = found[-1].offset + found[-1].length
    tail = bub.unfinished_tail(crash, end, found[-1].pos + 1)
    assert tail is not None and "unfinished" in tail.problem and tail.length == crash.stat().st_size - end


def test_each_file_is_read_in_its_own_format(tmp_path) -> None:
    assert bub_next.file_format(SESSION) == "bub-next"
    assert bub_next.file_format(OLD / "session_realistic.jsonl") == "0.5.1"
    empty = tmp_path / "a__b.jsonl"
    empty.write_bytes(b"")
    assert bub_next.file_format(empty) == ""


def test_a_0_5_1_line_in_a_next_tape_says_bub_refuses_the_tape(tmp_path) -> None:
    mixed = tmp_path / "a__b.jsonl"
    shutil.copy(SESSION, mixed)
    with mixed.open("ab") as f:
        f.write(
            b'{"id": 170, "kind": "anchor", "payload": {"name": "x"}, "meta": {}, "date": "2026-12-01T00:00:00+00:00"}\n'
        )
    found = list(bub.scan(mixed))
    assert sum(e.readable for e in found) == 169
    assert "Bub 0.5.1's format" in found[-1].problem and "refuses the whole tape" in found[-1].problem


def test_a_next_line_in_a_0_5_1_tape_says_so(tmp_path) -> None:
    mixed = tmp_path / "a__b.jsonl"
    shutil.copy(OLD / "session_realistic.jsonl", mixed)
    with mixed.open("ab") as f:
        f.write(SESSION.read_bytes().splitlines(keepends=True)[0])
    found = list(bub.scan(mixed))
    assert not found[-1].readable and "Bub's next format" in found[-1].problem
    assert all(e.readable for e in found[:-1])


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda o: o.update(specversion="0.3"), "specversion"),
        (lambda o: o.update(id=""), "id is not"),
        (lambda o: o.pop("type"), "type is not"),
        (lambda o: o.update(time="2026-12-01T21:55:08"), "time"),
        (lambda o: o.update({"bub_turn": "x"}), "extension"),
        (lambda o: o["data"].update(source="robot"), "data.source"),
        (lambda o: o["data"].pop("message"), "no message"),
        (lambda o: o["data"].update(model_name="x"), "model_name"),
        (lambda o: o.update(data=[]), "data is not"),
    ],
)
def test_a_line_bub_would_refuse_is_unreadable_and_says_why(tmp_path, change, why) -> None:
    obj = json.loads(SESSION.read_text().splitlines()[0])
    change(obj)
    tape = tmp_path / "a__b.jsonl"
    tape.write_text(SESSION.read_text().splitlines()[1] + "\n" + json.dumps(obj) + "\n")
    entry = list(bub.scan(tape))[-1]
    assert not entry.readable and why in entry.problem and "refuses the whole tape" in entry.problem
