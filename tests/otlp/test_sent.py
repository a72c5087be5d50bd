"""What the indexer's export remembers per tape: files that agents rewrite whole are sent turn by turn once,
a session started afresh is sent again, and a hostile tape becomes spans and never an exception."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import orjson
import pytest

from tapeview.otlp import delivery, live, spans
from tapeview.sources import reader
from tapeview.tapes import discovery, index, turns
from tapeview.tapes.models import Tape

from .receiver import receiving

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SESSION = "dGVsZWdyYW06ODEyMzQ1Njc4OQ"


@pytest.fixture
def nanobot(db, settings, tmp_path: Path) -> Path:
    root = tmp_path / "nanobot"
    shutil.copytree(FIXTURES / "nanobot" / "current", root)
    settings.TAPEVIEW_SOURCES = f"nb=nanobot:{root}"
    return next(root.rglob(f"{SESSION}.jsonl"))


def indexed() -> Tape:
    (spec,) = discovery.configured_sources()
    found, _, _, _ = discovery.discover(spec)
    tape = next(t for t in found if t.name == SESSION)
    index.refresh(tape)
    tape.refresh_from_db()
    return tape


def rewrite(path: Path, lines: list[dict]) -> None:
    """As nanobot saves a session: the whole file written again, and renamed over the old one."""
    part = path.with_suffix(".tmp")
    part.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    stat = path.stat()
    os.replace(part, path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))


def exchange(n: int) -> list[dict]:
    when = f"2026-11-13T09:00:{n:02d}.000000"
    return [
        {"role": "user", "content": f"question {n}", "timestamp": when},
        {"role": "assistant", "content": f"answer {n}", "timestamp": when},
    ]


def send_once(receiver_url: str) -> None:
    export = live.Export(delivery, delivery.exporter(receiver_url), threading.Event())
    export.catch_up()


def turn_numbers(receiver) -> list[int]:
    return sorted(
        s.attributes["tapeview.turn.number"] for s in receiver.spans if s.name.startswith("invoke_agent")
    )


def test_a_rewritten_session_sends_only_its_new_turns_and_a_fresh_one_starts_again(nanobot: Path) -> None:
    lines = [json.loads(line) for line in nanobot.read_text().splitlines()]
    with receiving() as receiver:
        indexed()
        send_once(receiver.url)
        assert turn_numbers(receiver) == [1, 2, 3, 4, 5, 6, 7]
        send_once(receiver.url)  # nothing changed: nothing sent
        rewrite(nanobot, lines + exchange(1))
        indexed()
        send_once(receiver.url)
        assert turn_numbers(receiver) == [1, 2, 3, 4, 5, 6, 7, 8]
        # /new: nanobot keeps the file, but its messages start again.
        rewrite(nanobot, [lines[0], *exchange(2)])
        indexed()
        send_once(receiver.url)
    assert turn_numbers(receiver) == [1, 1, 2, 3, 4, 5, 6, 7, 8]
    firsts = [
        s
        for s in receiver.spans
        if s.name.startswith("invoke_agent") and s.attributes["tapeview.turn.number"] == 1
    ]
    assert firsts[0].trace_id != firsts[1].trace_id  # another session: other ids
    assert len({(s.trace_id, s.span_id) for s in receiver.spans}) == len(receiver.spans)


def test_a_turn_still_under_way_is_not_sent_until_its_answer_is_written(nanobot: Path) -> None:
    lines = [json.loads(line) for line in nanobot.read_text().splitlines()]
    with receiving() as receiver:
        rewrite(nanobot, lines + exchange(1)[:1])  # the question, no answer yet
        indexed()
        send_once(receiver.url)
        assert turn_numbers(receiver) == [1, 2, 3, 4, 5, 6, 7]
        rewrite(nanobot, lines + exchange(1))
        indexed()
        send_once(receiver.url)
    assert turn_numbers(receiver) == [1, 2, 3, 4, 5, 6, 7, 8]


HOSTILE = [
    b'{"id": 1, "kind": "message", "payload": {"role": "user", "content": "hi"}, "meta": {}}\n',  # no date
    b"{not json at all\n",
    b'{"id": 3, "kind": "tool_call", "payload": {"calls": [{"id": ["a", "list"], "function": "x"}, null, 7]},'
    b' "meta": {}, "date": "2026-01-01T00:00:01+00:00"}\n',
    b'{"id": 4, "kind": "tool_result", "payload": {"results": [{"deep": [[[[1]]]]}, null]}, "meta": {},'
    b' "date": "not a date"}\n',
    b'{"id": 5, "kind": "event", "payload": {"name": "run", "data": {"status": "ok", "usage": {"prompt_tokens":'
    b' -5, "completion_tokens": "many"}, "model": 12}}, "meta": {}, "date": "2026-01-01T00:00:02+00:00"}\n',
    b'{"id": 6, "kind": "tool_result", "payload": {"results": ["an answer nobody asked for"]}, "meta": {},'
    b' "date": "2026-01-01T00:00:03+00:00"}\n',
    b'{"id": 7, "kind": "anchor", "payload": "not an object", "meta": {}, "date": "2026-01-01T00:00:04+00:00"}\n',
]


def test_a_hostile_tape_becomes_spans_and_its_unreadable_line_an_error(tmp_path: Path) -> None:
    tape = tmp_path / "hostile.jsonl"
    tape.write_bytes(b"".join(HOSTILE))
    source = reader("bub")
    found = list(turns.read(source, source.scan(tape)))
    session = spans.Session("h", "s", "hostile.jsonl", "bub", "hostile", "hostile", "k", "g", fallback=None)
    made = spans.spans(session, found, content=True)
    line = spans.otlp_json(made)
    assert [t.number for t in found] == [1]
    assert any("unreadable line 2" in e for e in found[0].errors)
    (root,) = [s for s in made if s.parent is None]
    assert root.status.is_ok is False
    tools = [s for s in made if s.name.startswith("execute_tool")]
    assert tools and all(s.start_time <= s.end_time for s in made)
    assert json.loads(line)["resourceSpans"]
