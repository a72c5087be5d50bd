"""The context budget past what its estimate reads whole: a tool result too big to parse, an
unreadable line, entries past the caps, an unfinished last line. A lower bound that still warns."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from tapeview.tapes import discovery, tokenizer
from tapeview.tapes.models import Tape

pytestmark = [pytest.mark.django_db, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

MODEL = "openai:gpt-4.1"  # a window of 1,047,576 tokens
MB = 1024 * 1024


def line(n: int, kind: str, payload: dict) -> bytes:
    date = f"2026-11-22T01:{n // 60:02d}:{n % 60:02d}+00:00"
    return json.dumps({"id": n, "kind": kind, "payload": payload, "meta": {}, "date": date}).encode() + b"\n"


def output(size: int) -> str:
    """About `size` characters of a command's output, as a shell tool returns it (TSV rows)."""
    rows, n = [], 0
    while n < size:
        rows.append(f"trip\t{len(rows)}\t2026-11-22\tLisbon\tPorto\t313.5 km\tok\n")
        n += len(rows[-1])
    return "".join(rows)


def turn(result: str, *between: bytes) -> list[bytes]:
    """An anchor, then a turn: a question, a tool call, its result, (`between`), the step's end."""
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "trips"}'}}
    return [
        line(1, "anchor", {"name": "session/start", "state": {"owner": "human"}}),
        line(2, "event", {"name": "loop.start", "data": {"model": MODEL}}),
        line(3, "message", {"role": "user", "content": "print the trips export"}),
        line(4, "tool_call", {"calls": [call]}),
        line(5, "tool_result", {"results": [result]}),
        *between,
        line(9, "event", {"name": "loop.step", "data": {"status": "ok"}}),
    ]


def write(folder: Path, name: str, lines: list[bytes]) -> str:
    (folder / f"{name}.jsonl").write_bytes(b"".join(lines))
    discovery.sync()
    return Tape.objects.get(name=name).key


def assert_warns(page: str, tokens: int) -> None:
    assert f'<strong id="budget-tokens">{tokens:,}</strong>' in page
    assert 'id="budget-warning"' in page or "Over the context window: the model cannot take all" in page


# 5.5 MB: past SCAN_PARSE_LIMIT (the index reads its head); 3 MB: indexed whole, past
# DISPLAY_PARSE_LIMIT (read by its head); 1.6 MB: read and counted whole; two of 1.5 MB: read
# whole, past CAP_CHARS (the older one's text partly priced by size).
@pytest.mark.parametrize("sizes", [(5.5,), (3,), (1.6,), (1.5, 1.5)])
def test_a_huge_tool_result_counts_at_least_by_its_size_and_warns(
    reader, viewer_client, served, sizes
) -> None:
    results = [output(int(mb * MB)) for mb in sizes]
    again = [line(6, "tool_call", {"calls": []}), line(7, "tool_result", {"results": results[1:]})]
    k = write(served["samples"], "big_result", turn(results[0], *(again if len(results) > 1 else [])))
    body = reader.get(f"/api/tapes/{k}/budget").json()
    chars, exact = sum(map(len, results)), sum(tokenizer.count(r, "o200k_base") for r in results)
    assert chars // 4 <= body["tokens_since_anchor"] <= exact + 100  # a lower bound, but near
    assert body["warn"] is True and body["ratio"] > 0.8
    assert body["suggested_handoff_pos"] is None  # no point after it is within half the window
    assert_warns(viewer_client.get(f"/tapes/{k}/").content.decode(), body["tokens_since_anchor"])


def test_an_unreadable_line_beside_a_huge_result_is_left_out_and_the_result_still_counts(
    reader, viewer_client, served
) -> None:
    result = output(int(5.5 * MB))
    glued = b'{"id": 6, "kind": "tool_res{"id": 7, "kind": "message", "payload": {}}\n'  # Bub skips it
    k = write(served["samples"], "unreadable", turn(result, glued))
    body = reader.get(f"/api/tapes/{k}/budget").json()
    assert len(result) // 4 <= body["tokens_since_anchor"] <= tokenizer.count(result, "o200k_base") + 100
    assert body["warn"] is True
    assert_warns(viewer_client.get(f"/tapes/{k}/").content.decode(), body["tokens_since_anchor"])


# The newest two entries read (the answer, the step's end): the result and all before it priced by size.
@pytest.mark.parametrize(("cap", "value"), [("CAP_ROWS", 2), ("CAP_BYTES", 100_000)])
def test_entries_past_the_caps_count_by_their_size_a_lower_bound_that_warns(
    reader, viewer_client, served, settings, monkeypatch, cap, value
) -> None:
    from tapeview.tapes import budget

    result = output(200_000)
    answer = line(6, "message", {"role": "assistant", "content": "There are 4,400 trips in the export."})
    k = write(served["samples"], "past_caps", turn(result, answer))
    whole = reader.get(f"/api/tapes/{k}/budget").json()["tokens_since_anchor"]
    settings.TAPEVIEW_MODEL_WINDOWS = {MODEL: whole // 3}  # the context is three windows
    monkeypatch.setattr(budget, cap, value)
    body = reader.get(f"/api/tapes/{k}/budget").json()
    assert body["capped"] is True and body["tokens_since_anchor"] <= whole  # a lower bound
    assert body["warn"] is True and body["ratio"] > 1 and body["over"] is True  # the whole context is over
    page = viewer_client.get(f"/tapes/{k}/").content.decode()
    assert "newest entries read, the rest priced by size (a lower bound)" in page
    assert_warns(page, body["tokens_since_anchor"])
    assert "Over the context window: the model cannot take all of this context; hand off now." in page


def test_an_unfinished_last_line_holds_the_suggested_handoff_as_mid_turn(
    reader, writer, operator_client, served, idle
) -> None:
    lines = turn("3 trips")
    k = write(served["samples"], "mid_write", [*lines, b'{"id": 10, "kind": "message", "payload": {"ro'])
    body = reader.get(f"/api/tapes/{k}/budget").json()
    assert (
        body["suggested_handoff_pos"] == len(lines) and body["mid_turn"] is True and body["writing"] is True
    )
    page = operator_client.get(f"/tapes/{k}/").content.decode()
    assert 'id="handoff-mid-turn"' in page and 'id="handoff-button" disabled' in page
    # What the suggestion waits for: a handoff written now is refused as busy.
    refused = writer.post(f"/api/tapes/{k}/handoff", {"name": "phase/next"})
    assert refused.status_code == 409 and "unfinished line" in refused.json()["detail"]


def test_the_tape_api_says_a_handoff_would_wait_while_a_line_is_being_written(
    writer, served, settings
) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 0
    tape = Tape.objects.get(label="telegram:-1001234567890")
    assert writer.get(f"/api/tapes/{tape.key}").json()["handoff_wait"] == ""
    with open(tape.path, "a") as f:
        f.write('{"id": 999, "kind": "message", "payload": {"role": "assist')
    body = writer.get(f"/api/tapes/{tape.key}").json()
    assert body["handoff"] is True and body["handoff_wait"].startswith(
        "busy: an unfinished line ends the tape"
    )


def test_a_huge_result_of_escaped_chinese_text_is_priced_as_the_model_reads_it(reader, served) -> None:
    # Written with json.dumps' default escapes (Bub 0.5 writes UTF-8; older nanobot escaped): each
    # character is six bytes (\u4e2d) in the line.
    result = "中文测试结果，第一行。\n" * (3 * MB // 72)
    k = write(served["samples"], "big_chinese", turn(result))
    body = reader.get(f"/api/tapes/{k}/budget").json()
    exact = tokenizer.count(result, "o200k_base")
    assert exact // 3 <= body["tokens_since_anchor"] <= exact + 100  # was six times the exact count


def test_a_tool_call_nested_a_thousand_deep_still_gets_its_budget(reader, viewer_client, served) -> None:
    deep = "[" * 1000 + "]" * 1000  # orjson reads up to 1,024 levels: the line is readable
    call = '{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": ' + deep + "}}"
    head = '{"id": 4, "kind": "tool_call", "payload": {"calls": ['
    lines = turn("done")
    lines[3] = (head + call + ']}, "meta": {}, "date": "2026-11-22T01:00:04+00:00"}\n').encode()
    assert orjson.loads(lines[3])["kind"] == "tool_call"
    k = write(served["samples"], "deep_call", lines)
    assert reader.get(f"/api/tapes/{k}/budget").status_code == 200
    assert viewer_client.get(f"/tapes/{k}/").status_code == 200
