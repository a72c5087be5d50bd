"""Hostile yachiyo and araliya files become an unreadable entry or a note the user sees, never an exception."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.sources import araliya, documents, yachiyo

DEEP = 10_000
DEEP_ARRAY = b"[" * DEEP + b"]" * DEEP
DEEP_OBJECT = b'{"a": ' * DEEP + b"1" + b"}" * DEEP
TOO_DEEP = "JSON nested too deeply to read safely (more levels than a parser follows)"
HALF_WRITTEN = ": yachiyo rewrites the whole file, caught half-written?"
SESSION = {
    "session_id": "s1",
    "messages": [
        {"id": "m1", "role": "user", "content": "héllo 世界", "created_at": "2026-11-22T01:35:29.000Z"},
        {"id": "m2", "role": "assistant", "content": "hi", "created_at": "2026-11-22T01:35:30.000Z"},
    ],
    "events": [],
    "runs": [],
}
GOOD_SESSION = json.dumps(SESSION, ensure_ascii=False, indent=2).encode()
BAD_UTF8 = b'{"messages": [{"role": "user", "content": "caf\xe9"}]}'  # \xe9 at byte 46


def yachiyo_store(tmp_path: Path, session: bytes = GOOD_SESSION, index: bytes | None = None) -> Path:
    store = tmp_path / "data" / "session-store"
    (store / "sessions").mkdir(parents=True)
    (store / "index.json").write_bytes(
        index or json.dumps({"sessions": {"s1": {"title": "Greeting"}}}).encode()
    )
    (store / "sessions" / "s1.json").write_bytes(session)
    return store


def only_entry(path: Path):
    entries = list(yachiyo.scan(path))
    assert len(entries) == 1, entries
    entry = entries[0]
    assert (entry.kind, entry.readable, entry.pos) == ("unreadable", False, 1)
    assert len(entry.preview) <= yachiyo.PREVIEW_BYTES + 1
    assert yachiyo.read_entries(path, [(1, 0, 0)]) == [entry]
    return entry


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"messages": ' + DEEP_ARRAY + b"}", TOO_DEEP),
        (DEEP_OBJECT, TOO_DEEP),
        # A lone surrogate sends the document to the standard library parser, and its clean-up.
        (
            b'{"messages": [{"role": "user", "content": "\\ud800"}], "x": ' + b"[" * 600 + b"]" * 600 + b"}",
            TOO_DEEP,
        ),
        (BAD_UTF8, "invalid UTF-8 (at byte 46)"),
        (b"\x00" * 4096, "NUL bytes where JSON was expected (zero-filled by a crash?)"),
        (GOOD_SESSION + b"\x00\x00\x00", "NUL bytes where JSON was expected (zero-filled by a crash?)"),
        (b"", "empty file" + HALF_WRITTEN),
        (
            GOOD_SESSION[: GOOD_SESSION.index("世界".encode())],
            "the document ends early (Unterminated string starting at: line 7 column 18 (char 103))"
            + HALF_WRITTEN,
        ),
        (
            GOOD_SESSION[:-1],
            "the document ends early (Expecting ',' delimiter: line 19 column 1 (char 330))" + HALF_WRITTEN,
        ),
    ],
    ids=[
        "deep_array",
        "deep_object",
        "deep_with_lone_surrogate",
        "invalid_utf8",
        "zero_filled",
        "trailing_nul",
        "empty",
        "cut_in_a_string",
        "cut_at_the_end",
    ],
)
def test_a_hostile_yachiyo_session_is_one_unreadable_entry(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = yachiyo_store(tmp_path, content) / "sessions" / "s1.json"

    assert only_entry(path).problem == problem


def test_a_lone_surrogate_escape_is_shown_as_a_replacement_character(tmp_path: Path) -> None:
    doc = GOOD_SESSION.replace("héllo 世界".encode(), b"cut emoji \\ud83d")
    path = yachiyo_store(tmp_path, doc) / "sessions" / "s1.json"

    first, second = yachiyo.scan(path)

    assert first.readable and first.payload["content"] == "cut emoji \ufffd"
    assert yachiyo.session_label("s1", first) == "cut emoji \ufffd"


def test_a_yachiyo_session_over_the_size_bound_is_not_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents, "MAX_BYTES", 100)
    path = yachiyo_store(tmp_path) / "sessions" / "s1.json"

    entry = only_entry(path)

    assert entry.problem == f"too big to read: {len(GOOD_SESSION):,} bytes (the limit is 100)"
    assert entry.preview.startswith('{\n  "session_id": "s1"')


@pytest.mark.parametrize(
    ("index", "note"),
    [
        (b'{"sessions": ' + DEEP_ARRAY + b"}", f"index.json is unreadable ({TOO_DEEP})"),
        (b'{"sessions": {"s1": {"title": "\xff"}}}', "index.json is unreadable (invalid UTF-8 (at byte 31))"),
        (
            b"\x00" * 64,
            "index.json is unreadable (NUL bytes where JSON was expected (zero-filled by a crash?))",
        ),
        (
            b'{"sessions": {"s1": {"tit',
            "index.json is unreadable (the document ends early (Unterminated string starting at: line 1 column 22 "
            "(char 21)); caught half-written?)",
        ),
    ],
    ids=["deep", "invalid_utf8", "zero_filled", "cut"],
)
def test_a_hostile_index_leaves_the_session_files_listed_with_a_note(
    tmp_path: Path, index: bytes, note: str
) -> None:
    store = yachiyo_store(tmp_path, index=index)

    [tape] = yachiyo.discover(store)

    assert (tape.name, tape.note) == ("s1", note)
    assert [e.readable for e in yachiyo.scan(tape.path)] == [True, True]


def test_nesting_and_odd_ids_inside_a_readable_yachiyo_session_do_not_crash_it(tmp_path: Path) -> None:
    deep_result = "[" * DEEP + "]" * DEEP
    events = [
        {
            "event": {
                "event": "tool.call",
                "trace_id": ["t"],
                "step_index": {"s": 1},
                "payload": {"call_id": {"c": 1}, "name": "bash", "args": {"a": [[[1]]]}},
            }
        },
        {
            "event": {
                "event": "tool.result",
                "trace_id": ["t"],
                "step_index": {"s": 1},
                "payload": {"call_id": {"c": 1}, "name": "bash", "result": deep_result, "error": True},
            }
        },
        {"event": {"event": ["not", "a", "name"], "trace_id": ["t"], "payload": {}}},
        {"event": {"event": "tool.error", "trace_id": ["t"], "payload": {"call_id": {"c": 1}}}},
    ]
    doc = SESSION | {
        "events": events,
        "runs": [{"trace_id": ["t"], "input": "go", "created_at": "0001-01-01T00:00:00"}],
    }
    path = yachiyo_store(tmp_path, json.dumps(doc).encode()) / "sessions" / "s1.json"

    entries = list(yachiyo.scan(path))
    [result] = [e for e in entries if e.kind == "tool_result"]

    assert all(e.readable for e in entries)
    assert yachiyo.tool_results(result)[0]["content"] == deep_result  # kept as the string it is
    assert result.is_error
    assert [m.role for m in yachiyo.context_messages(entries)] == ["user", "assistant"]


# araliya: sessions.json and kv.json are JSON that serde_json reads strictly; transcripts are text.

SESSIONS_JSON = {"sessions": {"s1": {"created_at": "2026-11-22T01:35:29Z", "last_agent": "chat"}}}
KV_JSON = {"cap": 200, "entries": [{"key": "k", "value": "v", "ts": "2026-11-22T01:35:29Z"}]}
TRANSCRIPT = "### user — 2026-11-22T01:35:29Z\n\nhéllo\n\n### assistant — 2026-11-22T01:35:30Z\n\nhi\n\n"
CUT_IN_THE_DASH = TRANSCRIPT.encode()[: TRANSCRIPT.encode().rindex("—".encode()) + 1]


def araliya_memory(tmp_path: Path, sessions: bytes | None = None, kv: bytes | None = None) -> Path:
    memory = tmp_path / "memory"
    (memory / "sessions" / "s1").mkdir(parents=True)
    (memory / "sessions.json").write_bytes(sessions or json.dumps(SESSIONS_JSON, indent=2).encode())
    (memory / "sessions" / "s1" / "kv.json").write_bytes(kv or json.dumps(KV_JSON, indent=2).encode())
    (memory / "sessions" / "s1" / "transcript.md").write_text(TRANSCRIPT, "utf-8")
    return memory


HOSTILE_JSON = [
    (b'{"sessions": ' + DEEP_ARRAY + b"}", TOO_DEEP),
    (DEEP_OBJECT, TOO_DEEP),
    (b'{"sessions": {"s1": {"last_agent": "caf\xe9"}}}', "invalid UTF-8 (at byte 39)"),
    (b"\x00" * 64, "NUL bytes where JSON was expected (zero-filled by a crash?)"),
    (
        b'{"sessions": {"s1": {"last_agent": "\\ud800"}}}',
        "invalid JSON for a strict parser (no low surrogate in string: line 1 column 37 (char 36))",
    ),
    (
        b'{\n  "sessions": {\n    "s1',
        "the document ends early (Unterminated string starting at: line 3 column 5 (char 22))",
    ),
]
HOSTILE_IDS = ["deep_array", "deep_object", "invalid_utf8", "zero_filled", "lone_surrogate", "cut"]


@pytest.mark.parametrize(("content", "problem"), HOSTILE_JSON, ids=HOSTILE_IDS)
def test_a_hostile_sessions_json_is_a_note_on_every_session_folder(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    memory = araliya_memory(tmp_path, sessions=content)

    [tape] = araliya.discover(memory)

    assert tape.name == "s1" and tape.label == "s1 (no agent)"
    assert tape.note == f"sessions.json is unreadable ({problem}); kv: 1 key (cap 200)"


@pytest.mark.parametrize(("content", "problem"), HOSTILE_JSON, ids=HOSTILE_IDS)
def test_a_hostile_kv_json_is_a_note_on_its_session(tmp_path: Path, content: bytes, problem: str) -> None:
    memory = araliya_memory(tmp_path, kv=content)

    [tape] = araliya.discover(memory)

    assert (tape.label, tape.note) == ("s1 (chat)", f"kv.json is unreadable ({problem})")


def test_odd_values_inside_readable_araliya_json_do_not_crash_discovery(tmp_path: Path) -> None:
    nested = "[" * 900 + "]" * 900
    sessions = '{"sessions": {"s1": {"created_at": ' + nested + ', "last_agent": ' + nested + "}}}"
    kv = '{"cap": ' + nested + ', "order": [' + nested + ', "k"], "values": {"k": "v"}}'
    memory = araliya_memory(tmp_path, sessions=sessions.encode(), kv=kv.encode())

    [tape] = araliya.discover(memory)

    assert (tape.label, tape.note) == ("s1 (no agent)", "kv: 1 key (cap ?)")


def write_transcript(tmp_path: Path, content: bytes) -> Path:
    path = araliya_memory(tmp_path) / "sessions" / "s1" / "transcript.md"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize(
    ("content", "found"),
    [
        (b"\x00" * 4096, [(False, "text before the first header: araliya's reader discards it")]),
        (
            TRANSCRIPT.encode() + b"### user \xe2\x80\x94 2026-11-22T01:35:31Z\n\ncaf\xe9\n\n",
            [(True, ""), (True, ""), (False, "invalid UTF-8: araliya cannot read this transcript")],
        ),
        (CUT_IN_THE_DASH, [(True, ""), (False, "invalid UTF-8: araliya cannot read this transcript")]),
        (TRANSCRIPT.encode()[: -len("i\n\n")], [(True, ""), (True, "")]),
    ],
    ids=["zero_filled", "invalid_utf8", "cut_mid_character", "cut_mid_entry"],
)
def test_a_damaged_transcript_is_read_as_far_as_it_goes(tmp_path: Path, content: bytes, found: list) -> None:
    path = write_transcript(tmp_path, content)

    entries = list(araliya.scan(path))

    assert [(e.readable, e.problem) for e in entries] == found
    assert araliya.read_entries(path, [(e.pos, e.offset, e.length) for e in entries]) == entries


def test_nul_bytes_and_deep_nesting_in_a_transcript_are_text_as_araliya_reads_them(tmp_path: Path) -> None:
    body = "a\x00b\n" + "> " * DEEP + "quote\n" + "[" * DEEP
    path = write_transcript(tmp_path, f"### user — 2026-11-22T01:35:29Z\n\n{body}\n\n".encode())

    [entry] = araliya.scan(path)

    assert entry.readable and entry.payload["content"] == body


def test_a_transcript_over_the_size_bound_is_one_unreadable_entry_read_by_its_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents, "MAX_BYTES", 50)
    path = write_transcript(tmp_path, TRANSCRIPT.encode())
    size = len(TRANSCRIPT.encode())

    [entry] = araliya.scan(path)

    assert (entry.readable, entry.pos, entry.offset, entry.length) == (False, 1, 0, size)
    assert entry.problem == f"too big to read: {size:,} bytes (the limit is 50)"
    assert entry.preview.startswith("### user — 2026-11-22T01:35:29Z")
    assert araliya.read_entries(path, [(1, 0, size)]) == [entry]
