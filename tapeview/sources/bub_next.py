"""Tapes in Bub's next format beside 0.5.1 ones: which format a file is in, its lines read in it, its context.

A tapes folder may hold both (the file names are the same, formats/bub-next.md §1, §8): each
file is read in the format of its first line, and a line of the other format in it is shown as
unreadable, saying what the agent of the tape's own format makes of it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from . import bub_lines, bub_next_lines, python_json
from .bub_next_lines import FORMAT, OLD_LINE_IN_NEXT, is_event_line, is_tool_error
from .model import ContextMessage, Entry, shown_call
from .raw_bytes import open_file

OLD = "0.5.1"  # the format of Bub 0.5.1 and before (formats/bub.md)
SNIFF_BYTES = 64 * 1024
_HEADS = (b'{"source": ', b'{"specversion": ')
NEXT_LINE_IN_OLD = (
    "a line in Bub's next format (a CloudEvent) in a tape of Bub 0.5.1's: Bub 0.5.1 skips it, "
    "and Bub's next release cannot read this tape"
)
SESSION_LIMIT = 500
NOT_PARSED = object()


def file_format(path) -> str:
    """The format of a tape file, from its first line: FORMAT, OLD, or "" while it has no line yet."""
    try:
        with open_file(path) as f:
            head = f.read(SNIFF_BYTES)
    except (OSError, LookupError):
        return ""
    return head_format(head)


def head_format(head: bytes) -> str:
    """The format the first bytes of a file show (see file_format)."""
    start = 0
    while True:
        end = head.find(b"\n", start)
        line = head[start:] if end < 0 else head[start:end]
        if end >= 0 and not line.strip():
            start = end + 1
            continue
        if end >= 0:
            return FORMAT if is_event_line(line) else OLD
        if not line.strip():
            return ""
        if line.lstrip().startswith(_HEADS):  # a first line longer than SNIFF_BYTES
            return FORMAT
        return OLD if len(head) >= SNIFF_BYTES else ""


def parse(fmt: str, raw: bytes, pos: int, offset: int, parsed: object = NOT_PARSED) -> Entry:
    """One line (its newline included) of a tape in format `fmt`, as that format's agent reads it;
    `parsed`: orjson's reading of it, where the caller has one."""
    if fmt == FORMAT:
        if parsed is NOT_PARSED:
            return bub_next_lines.parse_line(raw, pos, offset)
        return bub_next_lines.parsed_line(python_json.exact(parsed, raw), raw, pos, offset)
    if parsed is NOT_PARSED:
        entry = bub_lines.parse_line(raw, pos, offset)
    else:
        entry = bub_lines.parsed_line(parsed, raw, pos, offset)
    if not entry.readable and is_event_line(raw.rstrip(b"\n")):
        entry.problem = NEXT_LINE_IN_OLD
    return entry


def other_format(entry: Entry) -> bool:
    """An unreadable line that is written in the other format than its tape's."""
    return entry.problem == NEXT_LINE_IN_OLD or entry.problem.startswith(OLD_LINE_IN_NEXT)


def is_next(entry: Entry) -> bool:
    return entry.meta.get("format") == FORMAT if entry.readable else False


def session_label(tape_name: str, entry: Entry) -> str | None:
    """The session id a line carries (`bubsessionid`), when it is the one the tape's name hashes."""
    session = entry.meta.get("bubsessionid")
    if not isinstance(session, str) or not session or len(session) > SESSION_LIMIT:
        return None
    wanted = tape_name.rsplit("__", 1)[-1]
    if len(wanted) == 16 and hashlib.md5(session.encode()).hexdigest()[:16] != wanted:
        return None  # a line merged in from another session's fork: not this tape's name
    return session


def context_messages(entries: Iterable[Entry]) -> list[ContextMessage]:
    """Bub's select_messages (formats/bub-next.md §5) over the entries after an anchor: only
    `bubcontext` lines; an agent step's tool calls and its results, one tool message each."""
    messages: list[ContextMessage] = []
    for e in entries:
        if not e.readable or not e.context:
            continue
        p = e.payload
        if e.kind == "message":
            messages.append(ContextMessage(p.get("role", ""), p.get("content"), e.pos))
        elif e.kind == "tool_call":
            calls = p.get("calls") or []
            shown = [shown_call(c) for c in calls]
            messages.append(ContextMessage("assistant", p.get("content") or "", e.pos, tool_calls=shown))
            for result in tool_results(e):
                call = next((c for c in calls if c.get("id") == result["call_id"]), None)
                fn = call.get("function") if isinstance(call, dict) else None
                name = fn.get("name") if isinstance(fn, dict) else None
                cid = result["call_id"]
                messages.append(ContextMessage("tool", result["content"], e.pos, tool_call_id=cid, name=name))
        elif e.kind == "anchor":
            state = bub_next_lines.json_text(p.get("state") or {})
            messages.append(ContextMessage("assistant", f"[Anchor created: {e.name}]: {state}", e.pos))
    return messages


def tool_results(entry: Entry) -> list[dict]:
    """The results an agent step carries with its calls, paired by `source_call_id`, else by position."""
    results = entry.payload.get("results") if isinstance(entry.payload, dict) else None
    calls = entry.payload.get("calls") if isinstance(entry.payload, dict) else None
    calls = calls if isinstance(calls, list) else []
    out = []
    for i, r in enumerate(results if isinstance(results, list) else []):
        r = r if isinstance(r, dict) else {"content": r}
        cid = r.get("source_call_id")
        if not isinstance(cid, str) and i < len(calls):
            cid = calls[i].get("id")
        content = r.get("content")
        text = content if isinstance(content, str) else bub_next_lines.json_text(content)
        out.append({"call_id": cid, "content": text, "is_error": is_tool_error(r)})
    return out
