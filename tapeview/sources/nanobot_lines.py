"""What each line of a nanobot session file is: a metadata record, provider state, or a message.

Follows ../shared/formats/nanobot.md §2: one JSON record per line (split on b"\\n" only: message
text may hold U+2028), a metadata record, an optional opaque provider_state record, then one
record per message.
"""

from __future__ import annotations

import re
from datetime import datetime

from . import python_json
from .model import AUTOMATION, CHECKPOINT, DISPLAY_PREVIEW_BYTES, Entry, call_id, unreadable

PREVIEW_BYTES = 600
RETRY_HINT = "\n\n[Analyze the error above and try a different approach.]"
_ROLE_HEAD = re.compile(rb'^\s*\{\s*"role"\s*:\s*"([A-Za-z_]{1,40})"')
_PROVIDER_STATE = re.compile(rb'^\s*\{\s*"_type"\s*:\s*"provider_state"\s*(?:,|\})')
# nanobot's own replay clean-up of assistant text (session/manager.py, _sanitize_assistant_replay_text).
_MESSAGE_TIME_PREFIX = re.compile(r"^\[Message Time: [^\]]+\]\n?")
_LOCAL_IMAGE_BREADCRUMB = re.compile(r"^\[image: (?:/|~)[^\]]+\]\s*$")
_TOOL_CALL_ECHO = re.compile(r"^\s*(?:generate_image|message)\([^)]*\)\s*$")


def parse_line(raw: bytes, pos: int, offset: int, index: int) -> Entry:
    """One record as nanobot's loader sees it, or an unreadable entry that says why."""
    try:
        record = _loads(raw)
    except UnicodeDecodeError:
        return _unreadable(raw, pos, offset, "invalid UTF-8 (nanobot cannot load this file at all)")
    except (ValueError, RecursionError):
        if not raw.endswith(b"\n"):
            return _unreadable(raw, pos, offset, "malformed JSON: the file ends mid-record (a cut write)")
        return _unreadable(raw, pos, offset, "malformed JSON")
    if not isinstance(record, dict):
        return _unreadable(raw, pos, offset, "not a record: the line is not a JSON object")
    if record.get("_type") == "metadata":
        return _metadata(record, raw, pos, offset)
    if record.get("_type") == "provider_state":
        return Entry(
            pos=pos,
            offset=offset,
            length=len(raw),
            id=None,
            kind="event",
            name="provider_state",
            payload={"_type": "provider_state", "data": _opaque(raw)},
            context=False,
        )
    return _message(record, raw, pos, offset, index)


def big_line(head: bytes, pos: int, offset: int, length: int, index: int) -> Entry:
    """A record too long to parse (`length` bytes, `head` its first ones): a message when its head
    names a role, as nanobot writes them (its loader counts it, so it keeps its place among the
    messages), shown truncated; else unreadable."""
    m = _ROLE_HEAD.match(head)
    if m is None:
        problem = f"a record of {length:,} bytes, too long to read, that does not start as a message"
        return unreadable(pos, offset, length, problem, _preview(head), context=False)
    role = m[1].decode()
    return Entry(
        pos=pos,
        offset=offset,
        length=length,
        id=index,
        kind="tool_result" if role == "tool" else "message",
        name="" if role == "tool" else role,
        truncated=True,
        preview=head[:DISPLAY_PREVIEW_BYTES].decode("utf-8", errors="replace") + "…",
    )


_loads = python_json.loads  # nanobot reads with the standard json module


def _metadata(record: dict, raw: bytes, pos: int, offset: int) -> Entry:
    date, problem = _local_time(record.get("updated_at"))
    archived, consolidated = record.get("last_archived"), record.get("last_consolidated")
    if is_int(archived) and is_int(consolidated) and archived != consolidated:
        problem = problem or "last_archived and last_consolidated differ (nanobot uses last_archived)"
    meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    usage = meta.get("_last_usage") if isinstance(meta.get("_last_usage"), dict) else {}
    key = record.get("key")
    return Entry(
        pos=pos,
        offset=offset,
        length=len(raw),
        id=None,
        kind="metadata",
        name=key if isinstance(key, str) else "",
        date=date,
        payload=record,
        problem=problem,
        tokens=_total(usage),
        prompt_tokens=_int_or_none(usage.get("input_tokens")),
        cached_tokens=_int_or_none(usage.get("cache_read_tokens")),
        context=False,
    )


def _message(record: dict, raw: bytes, pos: int, offset: int, index: int) -> Entry:
    role = record.get("role") if isinstance(record.get("role"), str) else ""
    content = record.get("content")
    date, problem = _local_time(record.get("timestamp"))
    is_error = False
    if role == "assistant" and record.get("tool_calls"):
        kind, name = "tool_call", ", ".join(c["name"] for c in tool_calls_of(record))
    elif role == "tool":
        kind, name = "tool_result", record.get("name") if isinstance(record.get("name"), str) else ""
        is_error = is_tool_error(content)
    else:
        kind, name = "message", role
    return Entry(
        pos=pos,
        offset=offset,
        length=len(raw),
        id=index,
        kind=kind,
        name=name,
        date=date,
        payload=record,
        meta={"flags": flags(record)},
        problem=problem,
        is_error=is_error,
        context=not record.get("_command") and not is_empty_assistant(record),
        aside=aside(record) if role == "user" else "",
    )


def aside(record: dict) -> str:
    """What a row nanobot wrote in the user's place is, "" for any other: a summary checkpoint
    (`_hidden_history`) or a cron / trigger turn (`_automation_turn`, legacy `_cron_turn`), the rows
    its is_hidden_history_message keeps from being shown as chat turns (formats/nanobot.md §2.3)."""
    if _is_marker(record.get("_hidden_history")):
        return CHECKPOINT
    if _is_marker(record.get("_automation_turn")) or record.get("_cron_turn") is True:
        return AUTOMATION
    return ""


def flags(record: dict) -> list[str]:
    """What a message row is besides a chat turn (formats/nanobot.md §2.3)."""
    marks = {
        "command": record.get("_command") is True,
        "channel_delivery": record.get("_channel_delivery") is True,
        CHECKPOINT: _is_marker(record.get("_hidden_history")),
        AUTOMATION: _is_marker(record.get("_automation_turn")) or record.get("_cron_turn") is True,
        "runtime_context": isinstance(record.get("_runtime_context"), dict),
        "media": bool(record.get("media")),
        "reasoning": bool(record.get("reasoning_content") or record.get("thinking_blocks")),
        "injected_event": bool(record.get("injected_event")),
        # Not str(content): a list content nested 1,000 deep would overflow repr's recursion.
        "persisted_output": _text(record.get("content")).startswith("[tool output persisted]"),
        "legacy_tools_used": "tools_used" in record,
        "unknown_type": "_type" in record,
    }
    return [flag for flag, on in marks.items() if on]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _is_marker(value: object) -> bool:
    return value is True or isinstance(value, dict)


def is_tool_error(content: object) -> bool:
    # nanobot marks a failed call only in the text: "Error…" plus a fixed retry hint.
    return isinstance(content, str) and (content.startswith("Error") or content.endswith(RETRY_HINT))


def is_empty_assistant(record: dict) -> bool:
    """An assistant row that `get_history` skips: blank text and nothing else to replay."""
    content = record.get("content", "")
    if record.get("role") != "assistant" or not isinstance(content, str):
        return False
    if any(key in record for key in ("tool_calls", "reasoning_content", "thinking_blocks")):
        return False
    return not replay_text(content).strip()


def _local_time(value: object) -> tuple[datetime | None, str]:
    """nanobot writes naive local times: read them as this host's local time."""
    if value is None:
        return None, ""
    if not isinstance(value, str):
        return None, "unreadable timestamp (not a string)"
    try:
        parsed = datetime.fromisoformat(value)
        return (parsed if parsed.tzinfo else parsed.astimezone()), ""
    except (ValueError, OverflowError, OSError):
        return None, f"unreadable timestamp {value[:40]!r}"


def _opaque(raw: bytes) -> str:
    return f"opaque provider state ({len(raw):,} bytes): nanobot keeps it private, not shown here"


def _unreadable(raw: bytes, pos: int, offset: int, problem: str) -> Entry:
    preview = _opaque(raw) if _PROVIDER_STATE.match(raw) else _preview(raw)
    return unreadable(pos, offset, len(raw), problem, preview, context=False)


def _preview(raw: bytes) -> str:
    text = raw[:PREVIEW_BYTES].decode("utf-8", errors="replace").rstrip("\n")
    return text + ("…" if len(raw) > PREVIEW_BYTES else "")


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_or_none(value: object) -> int | None:
    return value if is_int(value) and value == python_json.count(value) else None


def _total(usage: dict) -> int:
    """The tokens of nanobot's last turn (`_last_usage`, formats/nanobot.md §2.4): its only usage record."""
    total = _int_or_none(usage.get("total_tokens"))
    if total is None:
        total = (_int_or_none(usage.get("input_tokens")) or 0) + (
            _int_or_none(usage.get("output_tokens")) or 0
        )
    return max(0, total)


def replay_text(content: str) -> str:
    """Assistant text as replay sends it. nanobot does use splitlines() here (U+2028 breaks a line)."""
    content = _MESSAGE_TIME_PREFIX.sub("", content, count=1)
    lines = [
        line
        for line in content.splitlines()
        if not _LOCAL_IMAGE_BREADCRUMB.match(line) and not _TOOL_CALL_ECHO.match(line)
    ]
    return "\n".join(lines).strip()


def tool_calls_of(record: dict) -> list[dict]:
    """`[{"id", "name", "arguments"}]` of an assistant row, arguments as stored (a JSON string)."""
    calls = record.get("tool_calls")
    out = []
    for call in calls if isinstance(calls, list) else []:
        call = call if isinstance(call, dict) else {}
        fn = call.get("function") if isinstance(call.get("function"), dict) else {}
        name = fn.get("name") if isinstance(fn.get("name"), str) else ""
        out.append({"id": call_id(call.get("id")), "name": name or "?", "arguments": fn.get("arguments")})
    return out
