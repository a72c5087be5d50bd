"""araliya-bot sessions: `sessions.json` and one `transcript.md` per session, read as araliya does.

Follows ../shared/formats/araliya.md (§B.2, §B.4). Every append re-parses, caps and rewrites the
whole transcript (`File::create` + `write_all`), so a tape is not append-only. An entry starts at
a line beginning with exactly "### " and runs to the next such line: `pos` is the entry's 1-based
number (an entry holds many lines: a pager counts entries), `offset`/`length` its byte span. A
content line that starts with "### " is split off by araliya's own reader; it is shown as the
entry araliya sees, with a problem.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

from . import documents
from .araliya_sessions import _memory_dirs as _memory_dirs  # the folders the Sources page says are read
from .araliya_sessions import detect as detect
from .araliya_sessions import discover as discover
from .araliya_sessions import kv_summary as kv_summary
from .documents import DocumentUnreadable
from .model import ContextMessage, Entry, TapeNotFound
from .raw_bytes import open_file
from .raw_bytes import read_raw as read_raw  # the contract's byte reader, the same for every kind

KIND = "araliya"
PREVIEW_BYTES = 600
CONTEXT_WINDOW = 20  # session_chat.rs: transcript entries injected as context
HEADER = b"### "
SEPARATOR = " \u2014 "  # space, EM DASH, space
# Rust's str::trim: the Unicode White_Space characters.
WHITE_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
SPLIT_OFF = "a content line starting with '### ' was split off by araliya's reader"


def scan(path: Path, start: int = 0, first_pos: int = 1) -> Iterator[Entry]:
    """All entries of the transcript; `start` and `first_pos` are ignored (always read whole)."""
    try:
        raw = documents.read_bytes(path)
    except FileNotFoundError as exc:
        if path.parent.is_dir():
            return  # a session without a transcript yet: no entries
        raise TapeNotFound(str(path)) from exc
    except OSError as exc:
        yield _unreadable(b"", 1, 0, f"cannot read the file: {exc.strerror or exc}")
        return
    except DocumentUnreadable as exc:
        yield _too_big(exc.head, 1, 0, exc.size)
        return
    pos = 0
    for line, offset, length in _spans(raw):
        if line == 1 and not raw.startswith(HEADER) and not raw[:length].strip():
            continue  # blank lines before the first header: araliya skips them, nothing is lost
        pos += 1
        yield parse_entry(raw[offset : offset + length], pos, offset)


def _spans(raw: bytes) -> Iterator[tuple[int, int, int]]:
    """(line number, byte offset, byte length) of each entry, and of any text before the first."""
    start_pos, start, offset = 1, 0, 0
    for number, line in enumerate(raw.split(b"\n"), 1):
        if line.startswith(HEADER) and offset > start:
            yield start_pos, start, offset - start
            start_pos, start = number, offset
        offset += len(line) + 1
    if len(raw) > start:
        yield start_pos, start, len(raw) - start


def read_entries(path: Path, spans: Iterable[tuple[int, int, int]]) -> list[Entry]:
    """The entries at these byte spans, reading only those bytes (a span over the bound: its head)."""
    spans = sorted(spans, key=lambda s: s[1])
    if not spans:
        return []
    out = []
    with open_file(path) as f:
        for pos, offset, length in spans:
            f.seek(offset)
            if length > documents.MAX_BYTES:
                out.append(_too_big(f.read(PREVIEW_BYTES + 1), pos, offset, length))
            else:
                out.append(parse_entry(f.read(length), pos, offset))
    return out


def unfinished_tail(path: Path, offset: int, pos: int) -> Entry | None:
    return None  # rewritten wholesale: there is no tail to wait for


def parse_entry(chunk: bytes, pos: int, offset: int) -> Entry:
    """One entry as araliya's parse_transcript reads it, or the text it discards."""
    if not chunk.startswith(HEADER):
        return _unreadable(chunk, pos, offset, "text before the first header: araliya's reader discards it")
    try:
        text = chunk.decode("utf-8")
    except UnicodeDecodeError:
        return _unreadable(chunk, pos, offset, "invalid UTF-8: araliya cannot read this transcript")
    # str::lines(): split on \n, drop one trailing \r per line, no empty last line.
    lines = [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")]
    header = lines[0][len("### ") :]
    if SEPARATOR in header:
        role, stamp = (part.strip(WHITE_SPACE) for part in header.split(SEPARATOR, 1))
    else:
        role, stamp = header, ""
    content = "\n".join(lines[1:]).strip(WHITE_SPACE)
    date, problem = None, SPLIT_OFF
    if _STAMP.fullmatch(stamp):
        try:
            date, problem = datetime.fromisoformat(stamp), ""
        except ValueError:
            problem = f"impossible timestamp {stamp!r}"
    payload = {"role": role, "timestamp": stamp, "content": content}
    return Entry(
        pos,
        offset,
        len(chunk),
        None,
        "message",
        name=role,
        date=date,
        payload=payload,
        problem=problem,
        meta={"split_off": bool(problem)},
    )


def _unreadable(raw: bytes, pos: int, offset: int, problem: str) -> Entry:
    text = raw[:PREVIEW_BYTES].decode("utf-8", errors="replace").rstrip("\n")
    preview = text + ("…" if len(raw) > PREVIEW_BYTES else "")
    return Entry(
        pos,
        offset,
        len(raw),
        None,
        "unreadable",
        readable=False,
        problem=problem,
        preview=preview,
        context=False,
    )


def _too_big(head: bytes, pos: int, offset: int, length: int) -> Entry:
    entry = _unreadable(head, pos, offset, documents.too_big(length, documents.MAX_BYTES))
    entry.length = length
    return entry


def pointer(metadata: dict | None, messages: int) -> int:
    """0: araliya keeps no archive pointer (it drops the oldest entries past its cap instead)."""
    return 0


def session_label(tape_name: str, entry: Entry) -> str | None:
    """The first user turn, for a session folder sessions.json does not list."""
    if entry.kind == "message" and entry.name == "user" and isinstance(entry.payload, dict):
        text = str(entry.payload.get("content") or "").strip()
        label = text.split("\n", 1)[0][:60].rstrip()
        return (label + "…" if len(label) < len(text) else label) or None  # "…": more was left out
    return None


def context_messages(entries: Iterable[Entry]) -> list[ContextMessage]:
    """The last 20 entries, bogus ones too, as session_chat.rs reads them for the next turn.

    araliya sends them to the model as one prompt, "Previous conversation:\\n{role}: {content}\\n…"
    followed by the new user turn; here each stays a message of its own.
    """
    messages = [e for e in entries if e.readable and e.kind == "message"][-CONTEXT_WINDOW:]
    return [ContextMessage(e.name, e.payload.get("content", ""), e.pos) for e in messages]


def tool_calls(entry: Entry) -> list[dict]:
    return []  # araliya's transcript keeps no tool calls


def tool_results(entry: Entry) -> list[dict]:
    return []
