"""nanobot's history journal, read only: memory/history.jsonl (or a legacy HISTORY.md) and Dream's cursors."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from .files import read_bytes
from .model import StoreRef

KIND = "nanobot.history"
HISTORY = "memory/history.jsonl"
LEGACY_HISTORY = "memory/HISTORY.md"
PREVIEW_CHARS = 600
# A legacy entry starts with "[YYYY-MM-DD…]"; inside a [RAW] dump the message lines look alike.
_ENTRY_START = re.compile(r"^\[\d{4}-\d{2}-\d{2}[^\]]*\]\s*")
_TIMESTAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2})\]\s*")
_RAW_MESSAGE = re.compile(r"^\[\d{4}-\d{2}-\d{2}[^\]]*\]\s+[A-Z][A-Z0-9_]*(?:\s+\[tools:\s*[^\]]+\])?:")


@dataclass(frozen=True)
class HistoryItem:
    """One history.jsonl entry, one HISTORY.md paragraph, or a line nanobot would skip."""

    line: int  # 1-based line of history.jsonl, or paragraph number of HISTORY.md
    cursor: int | None
    timestamp: str | None  # as written: "YYYY-MM-DD HH:MM", naive local time
    content: str  # for an unreadable line, a bounded preview of its raw text
    session_key: str | None = None
    readable: bool = True
    problem: str = ""


def history(ref: StoreRef, query: str | None = None) -> list[HistoryItem]:
    """Entries newest first: the order nanobot wrote them in (cursor order), not their timestamps."""
    items = parse(ref, read_bytes(ref.path) or b"")
    if query:
        needle = query.casefold()
        items = [item for item in items if needle in item.content.casefold()]
    return items


def dream_progress(workspace: Path) -> dict[str, int | None]:
    """`.cursor` (last cursor handed out), `.dream_cursor` (last one Dream consumed) and what is left."""
    memory = workspace / "memory"
    cursor, dream_cursor = (_cursor_file(path) for path in cursor_files(memory))
    cursors = [i.cursor for i in _jsonl_items(read_bytes(memory / "history.jsonl") or b"") if i.readable]
    done = dream_cursor or 0  # nanobot reads a missing or unreadable .dream_cursor as 0
    return {
        "cursor": cursor,
        "dream_cursor": dream_cursor,
        "entries": len(cursors),
        "last_entry": max(cursors, default=None),
        "pending": sum(1 for c in cursors if c > done),
    }


def parse(ref: StoreRef, data: bytes) -> list[HistoryItem]:
    """The entries in `data` (the file's bytes), newest first."""
    items = _legacy_items(data) if ref.path.name == "HISTORY.md" else _jsonl_items(data)
    items.reverse()
    return items


def cursor_files(memory: Path) -> list[Path]:
    """`.cursor` (the last cursor handed out) and `.dream_cursor` (the last one Dream consumed)."""
    return [memory / ".cursor", memory / ".dream_cursor"]


def _cursor_file(path: Path) -> int | None:
    try:
        value = int((read_bytes(path) or b"").decode("utf-8").strip())
    except (OSError, ValueError):
        return None
    return value if value >= 0 else None


def _jsonl_items(data: bytes) -> list[HistoryItem]:
    items = []
    # Split on "\n" only: entry text may hold U+2028, which splitlines() would break on.
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if raw.strip():
            items.append(_jsonl_item(raw, number, cut=number == len(lines)))
    return items


def _jsonl_item(raw: bytes, number: int, cut: bool) -> HistoryItem:
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return _unreadable(raw, number, "invalid UTF-8")
    except (ValueError, RecursionError):
        problem = (
            "malformed JSON: the file ends mid-entry (an append in progress?)" if cut else "malformed JSON"
        )
        return _unreadable(raw, number, problem)
    if not isinstance(record, dict):
        return _unreadable(raw, number, "not an entry: the line is not a JSON object")
    cursor = record.get("cursor")
    if isinstance(cursor, bool) or not isinstance(cursor, int) or cursor < 0:
        return _unreadable(raw, number, "no valid cursor: nanobot skips this entry")
    timestamp, content = record.get("timestamp"), record.get("content")
    if not isinstance(timestamp, str) or not isinstance(content, str):
        return _unreadable(raw, number, "timestamp or content is not text: nanobot skips this entry")
    key = record.get("session_key")
    return HistoryItem(number, cursor, timestamp, content, key if isinstance(key, str) else None)


def _unreadable(raw: bytes, number: int, problem: str) -> HistoryItem:
    text = raw.decode("utf-8", errors="replace")
    preview = text[:PREVIEW_CHARS] + ("…" if len(text) > PREVIEW_CHARS else "")
    return HistoryItem(number, None, None, preview, readable=False, problem=problem)


def _legacy_items(data: bytes) -> list[HistoryItem]:
    """HISTORY.md cut into entries the way nanobot's migration cuts it, so numbers match future cursors."""
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n").strip()
    items = []
    for number, chunk in enumerate(_legacy_chunks(text), start=1):
        match = _TIMESTAMP.match(chunk)
        if match and chunk[match.end() :].strip():
            items.append(HistoryItem(number, None, match.group(1), chunk[match.end() :].lstrip()))
        else:
            items.append(HistoryItem(number, None, None, chunk))
    return items


def _legacy_chunks(text: str) -> list[str]:
    chunks: list[list[str]] = []
    after_blank = False
    for line in text.split("\n") if text else []:
        starts_entry = bool(_ENTRY_START.match(line)) and not (
            chunks and _is_raw(chunks[-1]) and _RAW_MESSAGE.match(line)
        )
        if chunks and line.strip() and (after_blank or starts_entry):
            chunks.append([line])
        elif chunks:
            chunks[-1].append(line)
        else:
            chunks.append([line])
        after_blank = not line.strip()
    return [joined for chunk in chunks if (joined := "\n".join(chunk).strip())]


def _is_raw(lines: list[str]) -> bool:
    first = next((line for line in lines if line.strip()), "")
    match = _TIMESTAMP.match(first)
    return bool(match) and first[match.end() :].lstrip().startswith("[RAW]")
