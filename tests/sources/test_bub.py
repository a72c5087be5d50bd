"""The Bub reader on the real sample tapes and on the damage a crash leaves behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.sources import bub, bub_lines
from tapeview.sources.model import TapeNotFound


def entries(path: Path) -> list:
    return list(bub.scan(path))


def test_real_session_reads_as_the_agent_sees_it(bub_samples: Path) -> None:
    found = entries(bub_samples / "session_realistic.jsonl")
    assert len(found) == 97
    assert all(e.readable for e in found)
    assert [e.pos for e in found] == list(range(1, 98))
    kinds = {e.kind for e in found}
    assert kinds == {"anchor", "event", "message", "system", "tool_call", "tool_result", "error"}
    anchors = [e.name for e in found if e.is_anchor]
    assert anchors == [
        "session/start",
        "phase/explore-done",
        "phase/implement",
        "auto_handoff/context_overflow",
    ]


def test_byte_offsets_point_at_each_line(bub_samples: Path) -> None:
    path = bub_samples / "session_realistic.jsonl"
    data = path.read_bytes()
    for e in entries(path):
        line = data[e.offset : e.offset + e.length]
        assert line.endswith(b"\n")
        assert json.loads(line)["id"] == e.id


def test_failed_tool_run_error_and_error_entry_are_errors(bub_samples: Path) -> None:
    found = {e.id: e for e in entries(bub_samples / "session_realistic.jsonl")}
    assert found[21].is_error  # a tool_result holding an error dict
    assert found[96].is_error and found[96].kind == "error"
    assert found[97].is_error  # run with status error
    assert sum(e.is_error for e in found.values()) == 3


def test_run_usage_gives_tokens_and_cache(bub_samples: Path) -> None:
    run = next(e for e in entries(bub_samples / "session_realistic.jsonl") if e.name == "run")
    assert (run.tokens, run.prompt_tokens, run.cached_tokens) == (2072, 2011, 1536)


def test_unfinished_last_line_is_not_an_entry(bub_samples: Path) -> None:
    path = bub_samples / "truncated_last_line_CRASH.jsonl"
    found = entries(path)
    assert len(found) == 97
    end = found[-1].offset + found[-1].length
    tail = bub.unfinished_tail(path, end, found[-1].pos + 1)
    assert tail is not None and not tail.readable
    assert tail.pos == 98 and "unfinished" in tail.problem
    assert "This reply was being written" in tail.preview


def test_glued_line_after_a_crash_is_unreadable_and_its_neighbours_survive(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = '{"id": 1, "kind": "message", "payload": {"role": "user", "content": "hi"}, "meta": {}}\n'
    glued = '{"id": 2, "kind": "message", "payload": {"role": "assi' + good.replace('"id": 1', '"id": 3')
    after = good.replace('"id": 1', '"id": 4')
    path.write_text(good + glued + after)
    found = entries(path)
    assert [e.readable for e in found] == [True, False, True]
    assert found[1].problem.startswith("glued line")
    assert bub_lines.salvage(found[1].preview).startswith('{"id": 3')


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b"{not json\n", "malformed JSON"),
        (b'{"id": 1, "kind": "message", "payload": {"content": "\xff\xfe"}}\n', "invalid UTF-8"),
        (b"[1, 2]\n", "not an entry: the line is not a JSON object"),
        (b'{"id": "7", "kind": "event", "payload": {}}\n', "not an entry: id is not an integer"),
        (b'{"id": 7, "kind": 3, "payload": {}}\n', "not an entry: kind is not a string"),
        (b'{"id": 7, "kind": "event", "payload": []}\n', "not an entry: payload is not an object"),
    ],
)
def test_bad_lines_become_unreadable_entries_that_say_why(tmp_path: Path, line: bytes, problem: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(line)
    (e,) = entries(path)
    assert not e.readable and e.kind == "unreadable" and e.problem == problem and e.pos == 1


def test_blank_lines_are_skipped_but_keep_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('\n{"id": 1, "kind": "event", "payload": {"name": "x"}, "meta": {}}\n')
    (e,) = entries(path)
    assert e.pos == 2 and e.offset == 1


def test_unknown_kinds_and_events_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"id": 1, "kind": "telepathy", "payload": {"x": 1}, "meta": 5}\n'
        '{"id": 2, "kind": "event", "payload": {"name": "brand.new"}, "meta": {}}\n'
    )
    a, b = entries(path)
    assert (a.kind, a.meta, a.readable) == ("telepathy", {}, True)
    assert (b.kind, b.name) == ("event", "brand.new")


def test_tape_without_time_field_has_unknown_time_not_1970(bub_samples: Path) -> None:
    found = entries(bub_samples / "memory_zone_pr33_unmerged.jsonl")
    assert found and all(e.date is None for e in found)


def test_legacy_float_timestamp_gives_the_time(bub_samples: Path) -> None:
    first = entries(bub_samples / "legacy_v0.2.3_session_timestamp.jsonl")[0]
    assert first.date is not None and first.date.year == 2026 and first.date.tzinfo is not None


def test_iso_date_without_fraction_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"id": 1, "kind": "event", "payload": {"name": "x"}, "meta": {}, "date": "2026-11-22T01:37:38+00:00"}\n'
    )
    assert entries(path)[0].date.isoformat() == "2026-11-22T01:37:38+00:00"


def test_forks_merged_keep_file_order_with_dates_out_of_order(bub_samples: Path) -> None:
    found = entries(bub_samples / "fork_merged.jsonl")
    assert [e.id for e in found] == sorted(e.id for e in found)
    dates = [e.date for e in found]
    assert dates != sorted(dates)


def test_memory_and_spill_anchors_do_not_start_phases(bub_samples: Path) -> None:
    zone = [e for e in entries(bub_samples / "hand_memory_zone.jsonl") if e.is_anchor]
    assert {e.name for e in zone if not e.phase} == {"memory/open", "memory/seal"}
    spill = [e for e in entries(bub_samples / "session_realistic__sidecar__spill.jsonl") if e.is_anchor]
    assert spill and not any(e.phase for e in spill)


def test_operational_entries_are_marked(bub_samples: Path) -> None:
    found = entries(bub_samples / "session_realistic.jsonl")
    spill_write = next(e for e in found if e.name == "spill.write")
    assert spill_write.context is False


def test_discover_attaches_sidecars_and_archives_to_their_owner(bub_home: Path) -> None:
    tapes = {t.key: t for t in bub.discover(bub_home)}
    owner = "9d11f561157e98d3__f2234c5149b3f79d.jsonl"
    assert tapes[owner].role == "tape"
    assert tapes[owner + ".20261122T013739Z.bak"].role == "archive"
    assert tapes[owner + ".20261122T013739Z.bak"].owner == owner
    sidecar_archive = "9d11f561157e98d3__f2234c5149b3f79d__sidecar__spill.jsonl.20261122T013739Z.bak"
    assert tapes[sidecar_archive].owner == owner
    sidecar = "9d11f561157e98d3__0b871d5e50e7c192__sidecar__spill.jsonl"
    assert tapes[sidecar].role == "sidecar"
    assert tapes[sidecar].owner == "9d11f561157e98d3__0b871d5e50e7c192.jsonl"
    assert sum(t.role == "tape" for t in tapes.values()) == 3


def test_discover_ignores_subdirectories_and_shows_orphans_and_legacy_names(tmp_path: Path) -> None:
    (tmp_path / "semantic").mkdir()
    (tmp_path / "semantic" / "x.jsonl").write_text("")
    (tmp_path / "gone__sidecar__spill.jsonl").write_text("")
    legacy = "0123456789abcdef0123456789abcdef__bub%3A0123456789abcdef.jsonl"
    (tmp_path / legacy).write_text("")
    (tmp_path / "0123456789abcdef0123456789abcdef__bub%3A0123456789abcdef__1a2b3c4d.jsonl").write_text("")
    tapes = {t.key: t for t in bub.discover(tmp_path)}
    assert "semantic/x.jsonl" not in tapes and "x.jsonl" not in tapes
    assert tapes["gone__sidecar__spill.jsonl"].owner is None
    assert "gone" in tapes["gone__sidecar__spill.jsonl"].note
    assert tapes[legacy].role == "tape"
    fork = tapes["0123456789abcdef0123456789abcdef__bub%3A0123456789abcdef__1a2b3c4d.jsonl"]
    assert (fork.role, fork.owner) == ("fork", legacy)


def test_session_label_is_recovered_from_the_channel_prompt(bub_home: Path) -> None:
    name = "9d11f561157e98d3__f2234c5149b3f79d"
    labels = {bub.session_label(name, e) for e in entries(bub_home / f"{name}.jsonl")}
    assert "telegram:-1001234567890" in labels


def test_legacy_file_name_label_uses_the_session_hash() -> None:
    e = bub.parse_line(b'{"id": 1, "kind": "message", "payload": {"role": "user", "content": "x"}}\n', 1, 0)
    import hashlib

    name = "0" * 32 + "__bub%3A" + hashlib.md5(b"cli_session").hexdigest()[:16]
    assert bub.session_label(name, e) == "cli_session"


def test_context_is_strictly_after_the_anchor_and_maps_tools(bub_samples: Path) -> None:
    found = entries(bub_samples / "session_realistic.jsonl")
    last_anchor = max(e.pos for e in found if e.is_anchor)
    msgs = bub.context_messages(e for e in found if e.pos > last_anchor)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    tool = msgs[2]
    assert (tool.name, tool.tool_call_id) == ("fs_write", "call_wr_07")
    assert msgs[1].tool_calls[0]["id"] == "call_wr_07"
    assert "中文" in msgs[-1].content


def test_context_drops_operational_entries_and_shows_inner_anchors(bub_samples: Path) -> None:
    found = entries(bub_samples / "reset_after_archive.jsonl")
    msgs = bub.context_messages(found)
    assert all("sidecar" not in str(m.content) for m in msgs)
    assert msgs[0].content.startswith("[Anchor created: session/start]")


def test_huge_entry_is_read_as_a_bounded_preview(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    blob = "x" * (bub.DISPLAY_PARSE_LIMIT + 10)
    path.write_text(
        json.dumps({"id": 1, "kind": "tool_result", "payload": {"results": [blob]}, "meta": {}}) + "\n"
    )
    (scanned,) = entries(path)
    (shown,) = bub.read_entries(path, [(1, 0, scanned.length)])
    assert shown.truncated and len(shown.preview) <= bub.DISPLAY_PREVIEW_BYTES + 1
    assert b"".join(bub.read_raw(path, 0, scanned.length)) == path.read_bytes()


def test_a_missing_tape_raises_tape_not_found(tmp_path: Path) -> None:
    with pytest.raises(TapeNotFound):
        entries(tmp_path / "nope.jsonl")


@pytest.mark.parametrize("depth", [300, 1_000, 10_000])
def test_deeply_nested_lines_never_crash_the_reader_or_the_context(tmp_path: Path, depth: int) -> None:
    deep = "[" * depth + "]" * depth
    deep_object = '{"a": ' * depth + "1" + "}" * depth
    path = tmp_path / "9d11f561157e98d3__0123456789abcdef.jsonl"  # no known session hashes so
    path.write_text(
        f'{{"id": 1, "kind": "message", "payload": {{"role": "user", "content": {deep_object}}}, "meta": {{}}}}\n'
        '{"id": 2, "kind": "tool_call", "payload": {"calls": [{"id": "c1", "function": {"name": "bash", "arguments": "{}"}}]}, "meta": {}}\n'
        f'{{"id": 3, "kind": "tool_result", "payload": {{"results": [{deep}]}}, "meta": {{}}}}\n'
        f'{{"id": 4, "kind": "anchor", "payload": {{"name": "phase/a", "state": {deep}}}, "meta": {{}}}}\n'
    )

    found = entries(path)
    messages = bub.context_messages(found)

    readable = depth < 1_024  # orjson's bound, which a line beyond reads as malformed
    assert [e.readable for e in found] == [readable, True, readable, readable]
    assert all(e.problem == "malformed JSON" for e in found if not e.readable)
    assert [bub.session_label(path.stem, e) for e in found] == [None] * 4
    assert all(isinstance(m.chars, int) for m in messages)
    if readable:
        assert messages[2].content == "(not shown: nested too deeply to write as JSON)"
        assert (
            messages[3].content
            == "[Anchor created: phase/a]: (not shown: nested too deeply to write as JSON)"
        )
