"""`tapeview export --otlp URL`: each family's tape arrives at a real OTLP/HTTP receiver as GenAI traces;
`tapeview export TAPE --format jsonl|md|otlp` writes one tape."""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tapeview.tapes.models import Tape
from tests.servers import free_port

from .receiver import Receiver, receiving

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ERROR = 2  # STATUS_CODE_ERROR
CLIENT = 3  # SPAN_KIND_CLIENT


@pytest.fixture
def sources(db, settings, tmp_path: Path) -> dict[str, Path]:
    """The four families' real sample files, copied, as the configured sources."""
    roots = {
        "bub": tmp_path / "bub",
        "nanobot": tmp_path / "nanobot",
        "yachiyo": tmp_path / "yachiyo",
        "araliya": tmp_path / "araliya",
    }
    shutil.copytree(FIXTURES / "bub", roots["bub"], ignore=shutil.ignore_patterns("tapes_dir"))
    shutil.copytree(FIXTURES / "nanobot" / "current", roots["nanobot"])
    shutil.copytree(FIXTURES / "yachiyo" / "data", roots["yachiyo"])
    shutil.copytree(FIXTURES / "araliya" / "bot-pkey51aee87e", roots["araliya"])
    settings.TAPEVIEW_SOURCES = ",".join(f"{k}={k}:{p}" for k, p in roots.items())
    return roots


def export(*args: str) -> str:
    out = io.StringIO()
    call_command("export", *args, stdout=out)
    return out.getvalue()


def sent(*targets: str) -> Receiver:
    with receiving() as receiver:
        export("--otlp", receiver.url, *targets)
    return receiver


def by_name(receiver: Receiver, operation: str) -> list:
    return [s for s in receiver.spans if s.attributes.get("gen_ai.operation.name") == operation]


def assert_children_of_their_turn(receiver: Receiver) -> None:
    turns = {s.trace_id: s for s in by_name(receiver, "invoke_agent")}
    assert all(s.parent_id == "" for s in turns.values())
    for s in by_name(receiver, "chat") + by_name(receiver, "execute_tool"):
        assert s.parent_id == turns[s.trace_id].span_id, s.name
        assert turns[s.trace_id].start <= s.start <= s.end <= turns[s.trace_id].end, s.name


# family, tape name, turns, tool calls by name, a call id seen
FAMILIES = [
    (
        "bub",
        "session_realistic",
        7,
        {"bash": 3, "fs_read": 1, "tape_handoff": 1, "spill_read": 1, "fs_write": 1},
        "call_ls_01",
    ),
    (
        "nanobot",
        "ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy",
        6,
        {"exec": 4, "write_file": 1, "list_dir": 1, "read_file": 2},
        "toolu_6fbssy8p5fqnsbtylji484ep",
    ),
    ("yachiyo", "sess-zh-prefs-0001", 3, {"memory_write": 9}, "call_1"),
    ("araliya", "01a200e4-e18d-7ffd-b1d0-f7592c930f76", 6, {}, None),
]


@pytest.mark.parametrize(
    ("family", "name", "turns", "tools", "call_id"), FAMILIES, ids=[f[0] for f in FAMILIES]
)
def test_a_tape_of_each_family_arrives_as_turns_model_calls_and_tools(
    sources, family: str, name: str, turns: int, tools: dict, call_id: str | None
) -> None:
    receiver = sent(name)
    agents = by_name(receiver, "invoke_agent")
    assert len(agents) == turns == len({s.trace_id for s in receiver.spans})
    assert {s.name for s in agents} == {f"invoke_agent {family}"}
    assert {s.attributes["gen_ai.conversation.id"] for s in receiver.spans} == {name}
    assert {s.attributes["gen_ai.agent.name"] for s in receiver.spans} == {family}
    assert Counter(s.attributes["gen_ai.tool.name"] for s in by_name(receiver, "execute_tool")) == tools
    assert all(
        s.name == f"execute_tool {s.attributes['gen_ai.tool.name']}"
        for s in by_name(receiver, "execute_tool")
    )
    if call_id:
        assert call_id in {s.attributes.get("gen_ai.tool.call.id") for s in by_name(receiver, "execute_tool")}
    chats = by_name(receiver, "chat")
    assert len(chats) >= turns and all(s.kind == CLIENT for s in chats)
    assert_children_of_their_turn(receiver)
    # The content stays out unless asked for.
    assert not any(
        k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.a", "gen_ai.tool.call.r"))
        for s in receiver.spans
        for k in s.attributes
    )


def test_bub_model_calls_carry_their_model_and_tokens_and_the_turns_their_dates(sources) -> None:
    receiver = sent("session_realistic")
    first = next(s for s in by_name(receiver, "chat") if s.attributes["tapeview.entry.pos"] == 9)
    assert first.name == "chat gpt-4o-mini"
    assert first.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert first.attributes["gen_ai.provider.name"] == first.attributes["gen_ai.system"] == "openai"
    assert (
        first.attributes["gen_ai.usage.input_tokens"],
        first.attributes["gen_ai.usage.output_tokens"],
    ) == (2011, 61)
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 1536
    switched = {s.attributes.get("gen_ai.request.model") for s in by_name(receiver, "chat")}
    assert switched == {"gpt-4o-mini", "gpt-4.1-mini"}  # the model_switch event
    # The turn's own dates: the user's message at 2026-11-22T01:37:38.962 starts the first turn.
    turn = next(s for s in by_name(receiver, "invoke_agent") if s.attributes["tapeview.turn.number"] == 1)
    assert turn.start // 1_000_000 == 1795311458954  # its loop's step start, a moment before the message
    assert turn.attributes["gen_ai.usage.input_tokens"] == 2011 + 2222


def test_anchors_are_span_events_and_phases_and_errors_are_error_status(sources) -> None:
    receiver = sent("session_realistic")
    turns = sorted(by_name(receiver, "invoke_agent"), key=lambda s: s.attributes["tapeview.turn.number"])
    events = {e[1]["tapeview.anchor.name"]: e for t in turns for e in t.events if e[0] == "tapeview.anchor"}
    assert set(events) == {
        "session/start",
        "phase/explore-done",
        "phase/implement",
        "auto_handoff/context_overflow",
    }
    assert events["phase/implement"][1]["tapeview.anchor.phase"] is True
    assert turns[3].attributes["tapeview.phase"] == "phase/implement"  # the turn after the anchor
    failed = turns[-1]  # Bub's model call failed: `error`, then `run` with status error
    assert failed.status == ERROR and "phase/missing" in failed.message
    assert [s.status for s in by_name(receiver, "chat") if s.trace_id == failed.trace_id] == [ERROR]
    tool_errors = [s for s in by_name(receiver, "execute_tool") if s.status == ERROR]
    assert [s.attributes["gen_ai.tool.call.id"] for s in tool_errors] == ["call_gl_02"]
    assert all(t.status != ERROR for t in turns[:-1])


def test_a_nanobot_tool_that_failed_is_an_error_span(sources) -> None:
    receiver = sent("dGVsZWdyYW06ODEyMzQ1Njc4OQ")
    failed = [s for s in by_name(receiver, "execute_tool") if s.status == ERROR]
    assert [s.attributes["gen_ai.tool.call.id"] for s in failed] == ["toolu_3s89a0sczqzgebd5rppig64x"]
    assert_children_of_their_turn(receiver)


def test_content_goes_along_when_asked_for(sources, settings) -> None:
    settings.TAPEVIEW_OTLP_CONTENT = True
    receiver = sent("ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy")
    turn = next(s for s in by_name(receiver, "invoke_agent") if s.attributes["tapeview.turn.number"] == 1)
    said = json.loads(turn.attributes["gen_ai.input.messages"])
    assert said[0]["role"] == "user" and "bigger than 1 GB" in said[0]["parts"][0]["content"]
    tool = next(s for s in by_name(receiver, "execute_tool") if s.trace_id == turn.trace_id)
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"])["path"] == "projects/tools/bigfiles.py"
    assert tool.attributes["gen_ai.tool.call.result"].startswith("Successfully wrote")
    answer = [
        json.loads(s.attributes["gen_ai.output.messages"])
        for s in by_name(receiver, "chat")
        if s.trace_id == turn.trace_id
    ]
    assert (
        answer[0][0]["parts"][-1]["type"] == "tool_call" and answer[0][0]["parts"][-1]["name"] == "write_file"
    )


def test_sending_again_gives_the_same_ids_and_every_source_is_sent_by_default(sources) -> None:
    once, again = sent("session_realistic"), sent()
    ids = {(s.trace_id, s.span_id) for s in once.spans}
    assert ids <= {(s.trace_id, s.span_id) for s in again.spans}
    assert len(ids) == len(once.spans)  # no two spans share an id
    kinds = {s.attributes["gen_ai.agent.name"] for s in again.spans}
    assert kinds == {"bub", "nanobot", "yachiyo", "araliya"}


def test_a_tape_is_written_as_otlp_json_with_the_ids_it_is_sent_with(sources, tmp_path: Path) -> None:
    receiver = sent("sess-zh-prefs-0001")
    out = tmp_path / "trace.json"
    assert export("sess-zh-prefs-0001", "--format", "otlp", "--output", str(out)) == ""
    lines = out.read_text().splitlines()
    spans = [
        s
        for line in lines
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]
    assert {(s["traceId"], s["spanId"]) for s in spans} == {(s.trace_id, s.span_id) for s in receiver.spans}
    assert {s["kind"] for s in spans} == {1, 3}  # INTERNAL, CLIENT: OTLP/JSON's integers
    assert all(int(s["startTimeUnixNano"]) <= int(s["endTimeUnixNano"]) for s in spans)


def test_a_tape_is_written_as_jsonl_or_markdown_by_the_web_export(sources, tmp_path: Path) -> None:
    out = tmp_path / "tape.jsonl"
    export("session_realistic", "--format", "jsonl", "--output", str(out))
    assert out.read_bytes() == (sources["bub"] / "session_realistic.jsonl").read_bytes()
    text = export(Tape.objects.get(name="session_realistic").key, "--format", "md")
    assert text.startswith("# ") and "bub" in text.splitlines()[2]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["no-such-tape", "--format", "md"], "no tape has the key or name 'no-such-tape'"),
        (["--format", "md"], "name one tape"),
        (["--otlp", "ftp://x"], "no http:// or https:// URL"),
        (
            ["--otlp", "http://127.0.0.1:9", "nothing-by-this-name"],
            "no source or tape is named 'nothing-by-this-name'",
        ),
        (["--otlp", "http://127.0.0.1:9", "--format", "md"], "--otlp sends to a collector"),
    ],
)
def test_a_bad_command_gets_a_clear_error(sources, args: list[str], says: str) -> None:
    with pytest.raises(CommandError, match=says.replace("(", r"\(").replace("?", r"\?")):
        export(*args)


def test_a_collector_that_is_down_is_a_clear_error(sources) -> None:
    with pytest.raises(CommandError, match="did not take"):
        export("--otlp", f"http://127.0.0.1:{free_port()}", "session_realistic")
