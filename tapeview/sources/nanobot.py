"""nanobot sessions for Tapeview: scan a session file, find the archive boundary, rebuild the replay.

Follows ../shared/formats/nanobot.md §2. Files are rewritten wholesale, so every scan starts at
byte 0; what each line holds is read by nanobot_lines.parse_line.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .model import DISPLAY_PREVIEW_BYTES, SCAN_PARSE_LIMIT, ContextMessage, Entry, shown_call
from .nanobot_files import detect, discover, key_from_stem
from .nanobot_lines import big_line, is_empty_assistant, is_int, parse_line, replay_text, tool_calls_of
from .raw_bytes import capped_lines, open_file, read_raw

__all__ = [
    "ARCHIVED_ANCHOR",
    "KIND",
    "SUMMARY_ANCHOR",
    "archive_boundary",
    "archive_offset",
    "asides",
    "context_messages",
    "detect",
    "discover",
    "last_summary",
    "pointer",
    "read_entries",
    "read_raw",
    "scan",
    "session_label",
    "tool_calls",
    "tool_results",
    "unfinished_tail",
]

KIND = "nanobot"
SUMMARY_ANCHOR = "nanobot/summary"  # a summary checkpoint marker (`_hidden_history`)
ARCHIVED_ANCHOR = "nanobot/archived"  # the first message the archive pointer leaves unarchived


def scan(path: Path, start: int = 0, first_pos: int = 1) -> Iterator[Entry]:
    """Every record of the file from byte 0 (`start` is ignored: nanobot rewrites the whole file)."""
    with open_file(path) as f:
        entries = list(_records(capped_lines(f, SCAN_PARSE_LIMIT, DISPLAY_PREVIEW_BYTES)))
    yield from _mark_phases(entries)


def _records(lines: Iterable[tuple[int, bytes, int]]) -> Iterator[Entry]:
    """The records of (offset, bytes, length) lines: a line too long to parse is read from its head."""
    pos, index = 1, 0
    for offset, raw, length in lines:
        if length > len(raw):
            entry = big_line(raw, pos, offset, length, index)
        elif raw.strip():
            entry = parse_line(raw, pos, offset, index)
        else:
            entry = None
        if entry is not None:
            index += entry.id is not None
            yield entry
        pos += 1


def _mark_phases(entries: list[Entry]) -> list[Entry]:
    """Anchors where nanobot cut the model's context (formats/nanobot.md §2.5): each summary
    checkpoint marker up to the archive pointer (compaction moves the pointer onto the marker it
    inserts, and replay starts there), and the message the pointer names. A marker past the
    pointer (one nanobot reset as invalid) cuts nothing: replay reads it as a plain user message.
    They are marked on those rows, which stay messages: the pointer lives in the metadata line,
    which nanobot rewrites with the whole file, so the anchors move when it does (the index reads
    such a file afresh). Each starts a phase and counts as an anchor of the tape.

    The checkpoint at the pointer is the latest (compaction moves the pointer onto it), the one the
    summary nanobot keeps is of: it is its state (`meta["state"]`), as Bub's handoff keeps one."""
    boundary = archive_boundary(entries)
    for e in entries:
        if e.id is None or not e.readable:
            continue
        if "checkpoint" in e.meta.get("flags", ()):
            if boundary is not None and e.pos <= boundary:
                e.anchor, e.phase = SUMMARY_ANCHOR, True
            if e.pos == boundary and (summary := last_summary(_metadata(entries))):
                e.meta["state"] = {"summary": summary}
        elif e.pos == boundary:
            e.anchor, e.phase = ARCHIVED_ANCHOR, True
    return entries


def _metadata(entries: Iterable[Entry]) -> dict | None:
    """The payload of the last readable metadata record (nanobot's loader takes the last one)."""
    found = [e.payload for e in entries if e.kind == "metadata" and e.readable]
    return found[-1] if found and isinstance(found[-1], dict) else None


def last_summary(metadata: dict | None) -> str:
    """`_last_summary.text` of a metadata record (formats/nanobot.md §2.4), "" when none is kept."""
    inner = metadata.get("metadata") if isinstance(metadata, dict) else None
    last = inner.get("_last_summary") if isinstance(inner, dict) else None
    text = last.get("text") if isinstance(last, dict) else None
    return text if isinstance(text, str) else ""


def read_entries(path: Path, spans: Iterable[tuple[int, int, int]]) -> list[Entry]:
    """The entries at these places, as `scan` gives them (a rescan: ids count the messages before)."""
    wanted = {pos for pos, _offset, _length in spans}
    if not wanted:
        return []
    return [e for e in scan(path) if e.pos in wanted]


def asides(path: Path, spans: Iterable[tuple[int, int, int]]) -> dict[int, str]:
    """`Entry.aside` of the user rows at these (pos, offset, length) places, by pos, where it is
    one (the user's own rows are left out). Read by byte span, as few bytes as that takes; a file
    nanobot rewrote since the spans were taken (its metadata line moves every offset) is read
    again whole, by position, as `read_entries` reads it."""
    spans = list(spans)
    found: dict[int, str] = {}
    with open_file(path) as f:
        for pos, offset, length in spans:
            if length > SCAN_PARSE_LIMIT:
                continue  # read from its head only, as `scan` does: no aside is known
            f.seek(offset)
            e = parse_line(f.read(length), pos, offset, 0)
            if not (e.readable and e.kind == "message" and e.name == "user" and e.length == length):
                wanted = {pos for pos, _offset, _length in spans}
                return {e.pos: e.aside for e in scan(path) if e.pos in wanted and e.aside}
            if e.aside:
                found[pos] = e.aside
    return found


def unfinished_tail(path: Path, offset: int, pos: int) -> Entry | None:
    """None: a cut last line is already an unreadable entry of `scan`."""
    return None


def session_label(tape_name: str, entry: Entry) -> str | None:
    """The session key: from a metadata record, or decoded from a 0.3+ file name."""
    if entry.kind == "metadata" and entry.name:
        return entry.name
    return key_from_stem(tape_name)


def archive_offset(entries: Iterable[Entry]) -> int:
    """`last_archived` (else `last_consolidated`) of the last metadata record, reset to 0 when
    it is not an int or lies outside 0…len(messages), as Session.__post_init__ does."""
    metadata, messages = None, 0
    for e in entries:
        if e.kind == "metadata" and e.readable:
            metadata = e.payload
        elif e.id is not None:
            messages += 1
    return pointer(metadata, messages)


def pointer(metadata: dict | None, messages: int) -> int:
    """The archive pointer a metadata record gives a session of `messages` messages."""
    values = (metadata.get("last_archived"), metadata.get("last_consolidated")) if metadata else ()
    offset = next((v for v in values if is_int(v)), 0)
    return offset if 0 <= offset <= messages else 0


def archive_boundary(entries: Iterable[Entry]) -> int | None:
    """The pos of the first message not yet archived into memory; None when nothing is archived.

    When every message is archived it is the pos just after the last entry.
    """
    entries = list(entries)
    offset = archive_offset(entries)
    if offset == 0:
        return None
    for e in entries:
        if e.id is not None and e.id >= offset:
            return e.pos
    return entries[-1].pos + 1


def context_messages(entries: Iterable[Entry]) -> list[ContextMessage]:
    """`Session.get_history()` of nanobot 0.3.5 over all the entries of a session (formats §2.5)."""
    entries = list(entries)
    offset = archive_offset(entries)
    replay = [e for e in entries if e.id is not None and e.readable and e.id >= offset]
    for i, e in enumerate(replay):
        if e.payload.get("role") == "user":
            # Keep a proactive delivery the user may be replying to.
            replay = replay[i - 1 if i > 0 and replay[i - 1].payload.get("_channel_delivery") else i :]
            break
    replay = replay[_legal_start(replay) :]
    out = []
    for e in replay:
        record = e.payload
        if record.get("_command") or is_empty_assistant(record):
            continue
        role = record.get("role") if isinstance(record.get("role"), str) else ""
        content = record.get("content", "")
        if role == "assistant" and isinstance(content, str):
            content = replay_text(content)
        content = _with_breadcrumbs(record, role, content)
        calls = record.get("tool_calls")
        out.append(
            ContextMessage(
                role,
                content,
                e.pos,
                tool_calls=[shown_call(c) for c in calls if _is_call(c)] if isinstance(calls, list) else None,
                tool_call_id=record.get("tool_call_id"),
                name=record.get("name"),
            )
        )
    return out


def _legal_start(replay: list[Entry]) -> int:
    """nanobot's find_legal_message_start: skip past tool results whose call is not in view."""
    declared: set[str] = set()
    start = 0
    for i, e in enumerate(replay):
        role = e.payload.get("role")
        if role == "assistant":
            calls = e.payload.get("tool_calls")
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict) and call.get("id"):
                    declared.add(str(call["id"]))
        elif role == "tool":
            call_id = e.payload.get("tool_call_id")
            if call_id and str(call_id) not in declared:
                start = i + 1
                declared.clear()
    return start


def _with_breadcrumbs(record: dict, role: str, content: Any) -> Any:
    """User media as `[image: path]` lines, and CLI app attachments, as replay adds them."""
    if role != "user" or not isinstance(content, str):
        return content
    media = record.get("media")
    lines = [f"[image: {p}]" for p in media if isinstance(p, str) and p] if isinstance(media, list) else []
    apps = record.get("cli_apps")
    if not isinstance(record.get("_runtime_context"), dict) and isinstance(apps, list):
        for app in apps[:8]:
            name = str(app.get("name") or "").strip().lower() if isinstance(app, dict) else ""
            if name:
                entry_point = str(app.get("entry_point") or "unknown").strip() or "unknown"
                lines.append(
                    f"[CLI App Attachment: @{name}; tool=run_cli_app; entry_point={entry_point}; "
                    f"skill=skills/cli-app-{name}/SKILL.md]"
                )
    if not lines:
        return content
    # Media first, then the app lines, each joined the way get_history joins them.
    return "\n".join([content, *lines]) if content else "\n".join(lines)


def _is_call(call: object) -> bool:
    return isinstance(call, dict) and isinstance(call.get("function", {}), dict)


def tool_calls(entry: Entry) -> list[dict]:
    return tool_calls_of(entry.payload) if isinstance(entry.payload, dict) else []


def tool_results(entry: Entry) -> list[dict]:
    """One result per `tool` row, paired with its call by `tool_call_id`."""
    if not isinstance(entry.payload, dict):
        return []
    call_id = entry.payload.get("tool_call_id")
    return [
        {
            "call_id": call_id if isinstance(call_id, str) and call_id else None,
            "content": entry.payload.get("content"),
            "is_error": entry.is_error,
        }
    ]
