"""The araliya reader over real memory files (tests/fixtures/araliya, copied from the samples)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tapeview.sources import araliya
from tapeview.sources.model import TapeNotFound

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "araliya"
IDENTITY = FIXTURE / "bot-pkey51aee87e"
MEMORY = IDENTITY / "memory"
CHAT = "01a200e4-e18d-7ffd-b1d0-f7592c930f76"  # a markdown chat in three languages, kv at 197/200
UNUSED = "01a200e5-0f28-73fd-a2f0-3121a0683a3a"  # never used: an empty transcript
CAPPED = "01a200e5-0f28-7b32-bd7c-5edc518e2448"  # truncated after a restart with transcript_cap=6


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    shutil.copytree(MEMORY, tmp_path / "memory")
    return tmp_path / "memory"


def transcript(sid: str, root: Path = MEMORY) -> Path:
    return root / "sessions" / sid / "transcript.md"


def write_transcript(memory: Path, text: str, sid: str = UNUSED) -> Path:
    path = transcript(sid, memory)
    path.write_bytes(text.encode("utf-8"))
    return path


def serialise(entries: list) -> bytes:
    """araliya's own writer (§B.4)."""
    return b"".join(
        f"### {e.payload['role']} — {e.payload['timestamp']}\n\n{e.payload['content']}\n\n".encode()
        for e in entries
    )


@pytest.mark.parametrize("root", [FIXTURE, IDENTITY, MEMORY])
def test_a_memory_dir_an_identity_dir_and_a_folder_of_identities_are_all_read(
    root: Path, tmp_path: Path
) -> None:
    assert araliya.detect(root)
    tapes = araliya.discover(root)
    assert [t.name for t in tapes] == [CHAT, UNUSED, CAPPED]  # oldest first, then by id
    assert all(t.path.is_file() and t.key == t.path.relative_to(root).as_posix() for t in tapes)
    assert not araliya.detect(tmp_path)


def test_each_session_is_labelled_with_its_id_and_agent_and_is_not_append_only() -> None:
    tapes = {t.name: t for t in araliya.discover(MEMORY)}
    assert tapes[CHAT].label == f"{CHAT} (chat)"
    assert tapes[CAPPED].label == f"{CAPPED} (observer)"
    assert not any(t.append_only for t in tapes.values())  # every append rewrites the whole file


def test_the_note_counts_the_sessions_kv_keys() -> None:
    tapes = {t.name: t for t in araliya.discover(MEMORY)}
    assert tapes[CHAT].note == "kv: 197 keys (cap 200)"
    assert tapes[UNUSED].note == "kv: 0 keys (cap 200)"
    assert tapes[CAPPED].note == "kv: 1 key (cap 200)"


@pytest.mark.parametrize(("sid", "count"), [(CHAT, 12), (CAPPED, 6), (UNUSED, 0)])
def test_the_real_transcripts_read_back_to_their_exact_bytes(sid: str, count: int) -> None:
    path = transcript(sid)
    entries = list(araliya.scan(path))
    assert len(entries) == count
    assert serialise(entries) == path.read_bytes()
    assert all(e.kind == "message" and e.readable and not e.problem and e.date for e in entries)


def test_roles_alternate_in_file_order_with_their_timestamps() -> None:
    entries = list(araliya.scan(transcript(CHAT)))
    assert [e.name for e in entries] == ["user", "assistant"] * 6
    assert entries[0].date.isoformat() == "2026-11-22T01:35:29+00:00"
    assert (
        entries[0].payload["content"]
        == "Hi! Can you summarise how your memory works? 请用中文和英文各写一段。"
    )
    assert entries[-1].payload == {
        "role": "assistant",
        "timestamp": "2026-11-22T01:35:41Z",
        "content": "You're welcome. 不客气！",
    }


def test_pos_counts_entries_not_lines_and_the_spans_cover_the_file() -> None:
    path = transcript(CHAT)
    raw = path.read_bytes()
    entries = list(araliya.scan(path))
    headers = [line for line in raw.split(b"\n") if line.startswith(b"### ")]
    assert [e.pos for e in entries] == list(range(1, len(headers) + 1))  # "#1 – #12" for 12 entries
    assert [e.offset for e in entries[1:]] == [e.offset + e.length for e in entries[:-1]]
    assert entries[-1].offset + entries[-1].length == len(raw)
    assert all(raw[e.offset :].startswith(headers[e.pos - 1]) for e in entries)


def test_read_entries_gives_the_entries_scan_gives() -> None:
    path = transcript(CHAT)
    entries = list(araliya.scan(path))
    picked = [entries[3], entries[0], entries[-1]]
    assert araliya.read_entries(path, [(e.pos, e.offset, e.length) for e in picked]) == sorted(
        picked, key=lambda e: e.offset
    )
    assert araliya.unfinished_tail(path, 0, 1) is None


def test_a_content_line_starting_with_hashes_is_shown_as_the_entry_araliya_splits_off(memory: Path) -> None:
    path = write_transcript(
        memory,
        "### user — 2026-11-22T01:35:29Z\n\nshow me a heading\n\n"
        "### assistant — 2026-11-22T01:35:30Z\n\n```md\n### Fixed\nbody\n```\n\n",
    )
    entries = list(araliya.scan(path))
    assert [e.name for e in entries] == ["user", "assistant", "Fixed"]
    assert entries[1].payload["content"] == "```md"  # the rest was cut off by araliya's reader
    bogus = entries[2]
    assert bogus.problem == "a content line starting with '### ' was split off by araliya's reader"
    assert bogus.readable and not bogus.is_error and bogus.date is None and bogus.pos == 3
    assert bogus.payload == {"role": "Fixed", "timestamp": "", "content": "body\n```"}
    assert bogus.meta["split_off"] and not entries[1].problem


def test_a_split_off_entry_rewritten_by_the_next_append_is_still_shown(memory: Path) -> None:
    path = write_transcript(memory, "### Added — \n\nbody\n\n### user — 2026-11-22T01:35:31Z\n\nnext\n\n")
    first, second = araliya.scan(path)
    assert (first.name, first.payload["timestamp"], first.problem) == ("Added", "", araliya.SPLIT_OFF)
    assert second.problem == ""


@pytest.mark.parametrize(
    ("header", "role", "stamp"),
    [
        ("### user – 2026-11-22T01:35:29Z", "user – 2026-11-22T01:35:29Z", ""),  # en dash
        ("### user - 2026-11-22T01:35:29Z", "user - 2026-11-22T01:35:29Z", ""),  # hyphen
        ("### Step — one — two", "Step", "one — two"),  # split at the first separator only
    ],
)
def test_a_header_without_araliyas_separator_keeps_the_whole_text_as_role(
    memory: Path, header: str, role: str, stamp: str
) -> None:
    [entry] = araliya.scan(write_transcript(memory, f"{header}\n\ntext\n\n"))
    assert (entry.name, entry.payload["timestamp"], entry.problem) == (role, stamp, araliya.SPLIT_OFF)


@pytest.mark.parametrize("line", ["#### deeper", "###\ttab", " ### indented", "###no space"])
def test_only_lines_starting_with_exactly_three_hashes_and_a_space_are_headers(
    memory: Path, line: str
) -> None:
    [entry] = araliya.scan(write_transcript(memory, f"### user — 2026-11-22T01:35:29Z\n\na\n{line}\nb\n\n"))
    assert entry.payload["content"] == f"a\n{line}\nb"


def test_crlf_and_surrounding_blank_lines_are_read_as_araliya_reads_them(memory: Path) -> None:
    path = write_transcript(
        memory, "### user — 2026-11-22T01:35:29Z\r\n\r\n\n   line one\r\nline two  \r\n\n\n"
    )
    [entry] = araliya.scan(path)
    assert entry.payload["content"] == "line one\nline two"
    assert entry.length == len(path.read_bytes())


def test_an_entry_with_empty_content_is_an_empty_message(memory: Path) -> None:
    [entry] = araliya.scan(write_transcript(memory, "### user — 2026-11-22T01:35:29Z\n\n\n\n"))
    assert entry.payload["content"] == "" and not entry.problem


def test_text_before_the_first_header_is_shown_as_discarded(memory: Path) -> None:
    first, second = araliya.scan(write_transcript(memory, "stray\n### user — 2026-11-22T01:35:29Z\n\nhi\n\n"))
    assert not first.readable and "discards" in first.problem and first.preview == "stray"
    assert (second.pos, second.offset, second.payload["content"]) == (2, 6, "hi")


def test_blank_lines_before_the_first_header_are_no_entry(memory: Path) -> None:
    [entry] = araliya.scan(write_transcript(memory, "\n\n### user — 2026-11-22T01:35:29Z\n\nhi\n\n"))
    assert (entry.pos, entry.offset) == (1, 2)


def test_invalid_utf8_is_an_unreadable_entry_not_an_exception(memory: Path) -> None:
    path = transcript(UNUSED, memory)
    path.write_bytes(
        "### user — 2026-11-22T01:35:29Z\n\nok\n\n### user — 2026-11-22T01:35:30Z\n\n".encode() + b"\xff\n"
    )
    first, second = araliya.scan(path)
    assert first.readable and not second.readable and "UTF-8" in second.problem


def test_a_session_without_a_transcript_has_no_entries_and_a_gone_one_is_not_found(memory: Path) -> None:
    transcript(UNUSED, memory).unlink()
    tape = next(t for t in araliya.discover(memory) if t.name == UNUSED)
    assert "no transcript.md yet" in tape.note and list(araliya.scan(tape.path)) == []
    shutil.rmtree(memory / "sessions" / UNUSED)
    with pytest.raises(TapeNotFound):
        list(araliya.scan(tape.path))


def test_a_session_folder_missing_from_sessions_json_is_shown_with_a_note(memory: Path) -> None:
    index = json.loads((memory / "sessions.json").read_text())
    del index["sessions"][CAPPED]
    (memory / "sessions.json").write_text(json.dumps(index, indent=2))
    tape = araliya.discover(memory)[-1]
    assert tape.name == CAPPED and tape.label == f"{CAPPED} (no agent)"
    assert tape.note.startswith("not listed in sessions.json")


@pytest.mark.parametrize("entry", [5, "s1", [CAPPED], None], ids=["a number", "a string", "a list", "null"])
def test_a_session_whose_entry_is_not_an_object_still_shows_its_folder_as_not_listed(
    memory: Path, entry: object
) -> None:
    index = json.loads((memory / "sessions.json").read_text())
    index["sessions"][CAPPED] = entry
    (memory / "sessions.json").write_text(json.dumps(index, indent=2))
    tapes = araliya.discover(memory)
    [refused] = [t for t in tapes if t.refused]
    assert refused.name == CAPPED and "its entry is not an object" in refused.refused
    read = {t.name: t for t in tapes if not t.refused}
    assert set(read) == {CHAT, UNUSED, CAPPED}
    assert read[CAPPED].note.startswith("not listed in sessions.json") and read[CAPPED].path.is_file()
    assert read[CHAT].label == f"{CHAT} (chat)" and not read[CHAT].note.startswith("not listed")


def test_a_half_written_sessions_json_still_shows_the_session_folders(memory: Path) -> None:
    (memory / "sessions.json").write_text('{\n  "sessions": {\n    "01a2')
    tapes = araliya.discover(memory)
    assert {t.name for t in tapes} == {CHAT, UNUSED, CAPPED}
    assert all("sessions.json is unreadable" in t.note for t in tapes)


def test_the_context_is_the_last_twenty_entries_as_araliya_reads_them(memory: Path) -> None:
    turns = "".join(
        f"### {'user' if i % 2 == 0 else 'assistant'} — 2026-11-22T01:35:29Z\n\nturn {i}\n\n"
        for i in range(25)
    )
    entries = list(araliya.scan(write_transcript(memory, turns)))
    context = araliya.context_messages(entries)
    assert [m.content for m in context] == [f"turn {i}" for i in range(5, 25)]
    assert [m.role for m in context[:2]] == ["assistant", "user"]
    assert context[0].source_pos == entries[5].pos


def test_a_session_label_comes_from_the_first_user_turn() -> None:
    first = next(iter(araliya.scan(transcript(CHAT))))
    assert (
        araliya.session_label(CHAT, first)
        == "Hi! Can you summarise how your memory works? 请用中文和英文各写一段。"[:60]
    )
    assert araliya.tool_calls(first) == [] and araliya.tool_results(first) == []
