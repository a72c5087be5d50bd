"""The yachiyo reader over real gateway files (tests/fixtures/yachiyo, copied from the samples)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import quote

import pytest

from tapeview.sources import yachiyo
from tapeview.sources.model import TapeNotFound

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "yachiyo" / "data"
SESSIONS = ["sess-zh-prefs-0001", "sess-project-facts", "sess-markdown-demo", "sess-low-permission"]
CJK_ID = "会话/日本語 #1?"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    shutil.copytree(FIXTURE, root)
    return root


def store(root: Path) -> Path:
    return root / "session-store"


def session_doc(sid: str) -> dict:
    return json.loads((FIXTURE / "session-store" / "sessions" / f"{sid}.json").read_text("utf-8"))


def index_doc() -> dict:
    return json.loads((FIXTURE / "session-store" / "index.json").read_text("utf-8"))["sessions"]


def entries(sid: str, root: Path = FIXTURE) -> list:
    return list(yachiyo.scan(store(root) / "sessions" / f"{quote(sid, safe=yachiyo.SAFE)}.json"))


def raw_events(entry) -> list[dict]:
    """The raw event records an entry stands for."""
    if "records" in entry.meta:
        return entry.meta["records"]
    return [entry.payload] if "event_index" in entry.meta else []


def add_session(
    root: Path, sid: str, title: str, *, indexed: bool = True, template: str = SESSIONS[3]
) -> Path:
    doc = session_doc(template) | {"session_id": sid, "title": title}
    path = store(root) / "sessions" / f"{quote(sid, safe=yachiyo.SAFE)}.json"
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), "utf-8")
    if indexed:
        index_path = store(root) / "index.json"
        index = json.loads(index_path.read_text("utf-8"))
        index["sessions"][sid] = index["sessions"][template] | {"session_id": sid, "title": title}
        index_path.write_text(json.dumps(index, ensure_ascii=False, indent=2), "utf-8")
    return path


def test_the_data_dir_the_session_store_and_the_home_are_detected(tmp_path: Path) -> None:
    assert yachiyo.detect(FIXTURE)
    assert yachiyo.detect(store(FIXTURE))
    assert yachiyo.detect(FIXTURE.parent)
    assert not yachiyo.detect(tmp_path)


@pytest.mark.parametrize("root", [FIXTURE, FIXTURE / "session-store"])
def test_every_indexed_session_is_a_rewritten_tape_labelled_by_title_and_id(root: Path) -> None:
    tapes = yachiyo.discover(root)
    index = index_doc()
    assert [t.name for t in tapes] == SESSIONS
    for tape in tapes:
        title = index[tape.name]["title"]
        cut = "…" if len(title.encode("utf-16-le")) == 80 else ""  # yachiyo cut it at 40 UTF-16 units
        assert tape.label == f"{title}{cut} · {tape.name}"
        assert tape.append_only is False and tape.note == "" and tape.path.is_file()
    assert len({t.key for t in tapes}) == len(tapes)


@pytest.mark.parametrize("sid", SESSIONS)
def test_every_message_appears_in_file_order_with_its_role(sid: str) -> None:
    doc, found = session_doc(sid), entries(sid)
    messages = [e for e in found if e.kind == "message"]
    assert [(e.name, e.payload["content"]) for e in messages] == [
        (m["role"], m["content"]) for m in doc["messages"]
    ]
    assert len(messages) == index_doc()[sid]["message_count"]


@pytest.mark.parametrize("sid", SESSIONS)
def test_the_timeline_runs_by_time_a_question_its_run_then_the_answer(sid: str) -> None:
    doc, found = session_doc(sid), entries(sid)
    dates = [e.date for e in found]
    assert None not in dates and dates == sorted(dates)  # no date runs backwards
    for run in doc["runs"]:
        anchor = next(i for i, e in enumerate(found) if e.kind == "anchor" and e.payload == run)
        asked = next(
            i
            for i, e in enumerate(found)
            if e.kind == "message" and e.payload.get("request_id") == run["request_id"] and e.name == "user"
        )
        answer = next(
            i for i, e in enumerate(found) if e.kind == "message" and e.meta["trace_id"] == run["trace_id"]
        )
        last_event = max(
            i
            for i, e in enumerate(found)
            if e.kind not in ("message", "anchor") and e.meta["trace_id"] == run["trace_id"]
        )
        assert asked < anchor < last_event < answer


@pytest.mark.parametrize("sid", SESSIONS)
def test_each_run_is_a_phase_of_exactly_its_own_events_and_messages(sid: str) -> None:
    doc, found = session_doc(sid), entries(sid)
    anchors = [i for i, e in enumerate(found) if e.kind == "anchor"]
    assert len(anchors) == len(doc["runs"]) == index_doc()[sid]["run_count"]
    assert all(found[i].phase for i in anchors)
    bounds = [*anchors, len(found)]
    for n, run in enumerate(doc["runs"]):
        assert found[anchors[n]].payload == run
        assert found[anchors[n]].name.startswith(f"run {n + 1}: ")
        steps = [e for e in found[bounds[n] + 1 : bounds[n + 1]] if e.kind != "message"]  # its own
        inside = [w["id"] for e in steps for w in raw_events(e)]
        own = [w["id"] for w in doc["events"] if w["event"]["trace_id"] == run["trace_id"]]
        assert sorted(inside) == sorted(own)
        firsts = [min(own.index(w["id"]) for w in raw_events(e)) for e in steps]
        assert firsts == sorted(firsts)  # an entry sits where its first event was


@pytest.mark.parametrize("sid", SESSIONS)
def test_every_raw_event_is_reachable_exactly_once(sid: str) -> None:
    doc, found = session_doc(sid), entries(sid)
    ids = sorted(w["id"] for e in found for w in raw_events(e))
    assert ids == sorted(w["id"] for w in doc["events"])
    assert len(ids) == index_doc()[sid]["event_count"]
    assert [e.pos for e in found] == list(range(1, len(found) + 1))


def test_streamed_deltas_are_folded_into_the_answer_they_built() -> None:
    found = entries("sess-zh-prefs-0001")
    texts = [e for e in found if e.name == "llm.stream.delta"]
    first = texts[0]
    assert first.payload["text"] == session_doc("sess-zh-prefs-0001")["messages"][1]["content"]
    assert first.meta["folded"] == 3
    assert [w["event"]["payload"]["delta"] for w in first.meta["records"]] == [
        "好的，我记住了：\n\n",
        "- 你最喜欢的颜色是**蓝色**\n- 你每天早上 7:00 起床\n\n",
        "以后安排日程时我会参考这些。",
    ]
    assert not first.context


@pytest.mark.parametrize("sid", SESSIONS)
def test_every_tool_call_is_followed_by_its_results_paired_by_call_id(sid: str) -> None:
    doc, found = session_doc(sid), entries(sid)
    tools = [e for e in found if e.kind in ("tool_call", "tool_result")]
    assert [e.kind for e in tools] == ["tool_call", "tool_result"] * (len(tools) // 2)
    for call, result in zip(tools[::2], tools[1::2], strict=True):
        assert [c["id"] for c in yachiyo.tool_calls(call)] == [
            r["call_id"] for r in yachiyo.tool_results(result)
        ]
    calls = [c for e in tools if e.kind == "tool_call" for c in yachiyo.tool_calls(e)]
    raw = [w["event"]["payload"] for w in doc["events"] if w["event"]["event"] == "tool.call"]
    assert calls == [{"id": p["call_id"], "name": p["name"], "arguments": p["args"]} for p in raw]


def test_a_tool_result_is_decoded_for_display() -> None:
    result = next(e for e in entries("sess-zh-prefs-0001") if e.kind == "tool_result")
    first = yachiyo.tool_results(result)[0]
    assert first["call_id"] == "call_1" and first["is_error"] is False
    assert first["content"]["ok"] is True and first["content"]["content"] == "用户最喜欢的颜色是蓝色"


def test_a_permission_denied_tool_error_is_an_error_counted_once() -> None:
    found = entries("sess-low-permission")
    result = next(e for e in found if e.kind == "tool_result")
    assert result.is_error
    [denied] = yachiyo.tool_results(result)
    assert denied["is_error"] and denied["content"]["code"] == "PERMISSION_DENIED"
    assert [e.name for e in found if e.is_error] == ["memory_write"]
    assert any(e.name == "tool.error" for e in found)


def test_ids_with_slash_hash_question_mark_and_cjk_are_read_through_their_encoded_file(data: Path) -> None:
    path = add_session(data, CJK_ID, "次のことを覚えてください（日本語テスト）。")
    assert path.name == "%E4%BC%9A%E8%AF%9D%2F%E6%97%A5%E6%9C%AC%E8%AA%9E%20%231%3F.json"
    tape = next(t for t in yachiyo.discover(data) if t.name == CJK_ID)
    assert tape.path == path and tape.note == ""
    assert tape.label == f"次のことを覚えてください（日本語テスト）。 · {CJK_ID}"
    assert [e.name for e in entries(CJK_ID, data) if e.kind == "message"] == ["user", "assistant"]


def test_a_session_file_missing_from_the_index_is_shown_with_a_note(data: Path) -> None:
    add_session(data, "sess/unlisted", "Unlisted", indexed=False)
    tape = next(t for t in yachiyo.discover(data) if t.name == "sess/unlisted")
    assert tape.label is None and "not listed in index.json" in tape.note
    first_user = next(e for e in yachiyo.scan(tape.path) if e.kind == "message")
    assert yachiyo.session_label(tape.name, first_user) == 'Remember that my password hint is "blue …'


def test_an_index_entry_whose_file_is_gone_is_shown_with_a_note(data: Path) -> None:
    (store(data) / "sessions" / "sess-markdown-demo.json").unlink()
    tape = next(t for t in yachiyo.discover(data) if t.name == "sess-markdown-demo")
    assert "file is gone" in tape.note
    with pytest.raises(TapeNotFound):
        list(yachiyo.scan(tape.path))


def test_temp_files_left_by_a_crash_are_not_tapes(data: Path) -> None:
    (store(data) / "sessions" / "sess-low-permission.json.tmp-123-456").write_text("{")
    assert [t.name for t in yachiyo.discover(data)] == SESSIONS


@pytest.mark.parametrize("cut", [0, 1, 100, 5000])
def test_a_half_written_file_is_one_unreadable_entry(data: Path, cut: int) -> None:
    path = store(data) / "sessions" / "sess-low-permission.json"
    path.write_bytes(path.read_bytes()[:cut])
    [entry] = list(yachiyo.scan(path))
    assert entry.kind == "unreadable" and not entry.readable and entry.pos == 1
    assert entry.problem and entry.preview.startswith(path.read_text("utf-8")[:600])
    assert yachiyo.read_entries(path, [(1, 0, 0)]) == [entry]


@pytest.mark.parametrize("content", [b"[1, 2]", b"\xff\xfe{}", b'"just a string"'])
def test_a_document_that_is_not_a_session_is_unreadable_not_an_exception(data: Path, content: bytes) -> None:
    path = store(data) / "sessions" / "sess-low-permission.json"
    path.write_bytes(content)
    [entry] = list(yachiyo.scan(path))
    assert entry.kind == "unreadable" and entry.problem


def test_a_lone_surrogate_left_by_a_js_slice_is_replaced_not_fatal(data: Path) -> None:
    path = store(data) / "sessions" / "sess-low-permission.json"
    text = path.read_text("utf-8").replace(
        "Remember that my password hint is", "Remember \\ud83d that my password hint is"
    )
    path.write_text(text, "utf-8")
    first = next(iter(yachiyo.scan(path)))
    assert first.readable and first.payload["content"].startswith("Remember \ufffd that")
    first.payload["content"].encode("utf-8")


def test_a_run_in_flight_gets_an_anchor_of_its_own_after_the_finished_runs(data: Path) -> None:
    path = store(data) / "sessions" / "sess-zh-prefs-0001.json"
    doc = json.loads(path.read_text("utf-8"))
    doc["runs"] = doc["runs"][:2]
    path.write_text(json.dumps(doc, ensure_ascii=False), "utf-8")
    anchors = [e for e in yachiyo.scan(path) if e.kind == "anchor"]
    assert [a.name.endswith("(no run record)") for a in anchors] == [False, False, True]
    assert anchors[-1].name.startswith("run 3: 再记几条") and anchors[-1].phase


def test_read_entries_gives_the_entries_scan_gives() -> None:
    path = store(FIXTURE) / "sessions" / "sess-markdown-demo.json"
    found = list(yachiyo.scan(path))
    picked = [found[0], found[7], found[-1]]
    assert yachiyo.read_entries(path, [(e.pos, e.offset, e.length) for e in picked]) == picked
    assert yachiyo.unfinished_tail(path, 0, 1) is None


def test_the_context_of_a_run_is_the_prompt_yachiyo_recorded_then_its_tool_turns() -> None:
    found = entries("sess-zh-prefs-0001")
    last_run = max(i for i, e in enumerate(found) if e.kind == "anchor")
    context = yachiyo.context_messages(found[last_run + 1 :])
    prompt = next(e for e in found[last_run:] if e.name == "llm.prompt.assembled")
    recorded = prompt.payload["event"]["payload"]["messages"]
    assert [(m.role, m.content) for m in context[: len(recorded)]] == [
        (m["role"], m["content"]) for m in recorded
    ]
    tail = context[len(recorded) :]
    assert [m.role for m in tail] == ["assistant", "tool", "tool", "tool", "tool"]
    assert (
        [c["id"] for c in tail[0].tool_calls]
        == [m.tool_call_id for m in tail[1:]]
        == [
            "call_6",
            "call_7",
            "call_8",
            "call_9",
        ]
    )
    assert (
        json.loads(tail[0].tool_calls[0]["function"]["arguments"])["content"]
        == "用户养了一只名叫“团子”的柴犬"
    )


def test_without_a_recorded_prompt_the_context_is_the_messages_in_order() -> None:
    found = entries("sess-project-facts")
    context = yachiyo.context_messages([e for e in found if e.kind == "message"])
    doc = session_doc("sess-project-facts")
    assert [(m.role, m.content) for m in context] == [(m["role"], m["content"]) for m in doc["messages"]]
