"""One line of a Bub tape as the agent's reader sees it: an entry, or an unreadable line that says why.

Follows ../shared/formats/bub.md §2 and §4.1: a line is an entry when `id` is an int, `kind` a
str and `payload` a dict; `date` (ISO) else `timestamp` (epoch) else time unknown.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import orjson

from . import python_json
from .model import DISPLAY_PREVIEW_BYTES, Entry, unreadable

PREVIEW_BYTES = 600
# Entries bigger than this are not parsed for display; their first bytes are shown instead.
DISPLAY_PARSE_LIMIT = 2 * 1024 * 1024
# Bub writes `id` and `kind` first; with json.dumps' default separators or compact ones (any JSON
# whitespace), as its reader would read the line either way.
_WS = rb"[ \t\r]*"
_HEAD = re.compile(
    rb"^" + _WS + rb"\{" + _WS + rb'"id"' + _WS + rb":" + _WS + rb"(-?\d+)" + _WS + rb","
    + _WS + rb'"kind"' + _WS + rb":" + _WS + rb'"([A-Za-z0-9_.\-]{1,40})"'
)  # fmt: skip
NON_PHASE_PREFIXES = ("memory/", "spill/")
FIRST_ID, LAST_ID = -(2**63), 2**63 - 1  # an id past 64 bits is unreadable
GLUE_MARK = b'{"id": '


def parse_line(raw: bytes, pos: int, offset: int) -> Entry:
    """One line as the agent's reader sees it, or an unreadable entry that says why."""
    try:
        # orjson refuses nesting deeper than 1,024 levels: a hostile line is malformed, not a crash.
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:  # what Bub's json.loads also reads: NaN, Infinity, a lone surrogate, a huge integer
            obj = python_json.fallback(raw)
        except (ValueError, RecursionError):
            return _unreadable(raw, pos, offset, _why_malformed(raw, exc))
    return parsed_line(obj, raw, pos, offset)


def parsed_line(obj: object, raw: bytes, pos: int, offset: int) -> Entry:
    """parse_line of a line whose JSON is already parsed (`obj`)."""
    length = len(raw)
    obj = python_json.exact(obj, raw)
    if not isinstance(obj, dict):
        return _unreadable(raw, pos, offset, "not an entry: the line is not a JSON object")
    eid, kind, payload = obj.get("id"), obj.get("kind"), obj.get("payload")
    if not isinstance(eid, int) or isinstance(eid, bool):
        return _unreadable(raw, pos, offset, "not an entry: id is not an integer")
    if not FIRST_ID <= eid <= LAST_ID:
        return _unreadable(raw, pos, offset, "not an entry: id is past 64 bits")
    if not isinstance(kind, str):
        return _unreadable(raw, pos, offset, "not an entry: kind is not a string")
    if not isinstance(payload, dict):
        return _unreadable(raw, pos, offset, "not an entry: payload is not an object")
    meta = obj.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    date, problem = _entry_date(obj)
    name, is_error, phase = "", kind == "error", False
    tokens, prompt_tokens, cached_tokens = 0, None, None
    if kind in ("anchor", "event"):
        name = payload.get("name") if isinstance(payload.get("name"), str) else ""
    if kind == "anchor":
        phase = not name.startswith(NON_PHASE_PREFIXES)
    elif kind == "message":
        role = payload.get("role")
        name = role if isinstance(role, str) else ""
    elif kind == "tool_result":
        results = payload.get("results")
        is_error = isinstance(results, list) and any(is_tool_error(r) for r in results)
    elif kind == "event":
        data = payload.get("data") if isinstance(payload.get("data"), dict) else {}
        is_error = (
            data.get("status") == "error"
            or name.endswith(".error")
            or bool(name == "loop.result" and data.get("error"))
        )
        usage = data.get("usage") if name == "run" else None
        if python_json.reports_usage(usage):
            tokens = _int(usage.get("total_tokens"))
            prompt_tokens = _int(usage.get("prompt_tokens"))
            details = usage.get("prompt_tokens_details")
            cached_tokens = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Entry(
        pos=pos,
        offset=offset,
        length=length,
        id=eid,
        kind=kind,
        name=name,
        date=date,
        payload=payload,
        meta=meta,
        problem=problem,
        is_error=is_error,
        tokens=tokens,
        prompt_tokens=prompt_tokens,
        cached_tokens=cached_tokens,
        context=meta.get("context") is not False,
        phase=phase,
    )


def is_tool_error(result: object) -> bool:
    return isinstance(result, dict) and "message" in result and "kind" in result


_int = python_json.count


def _entry_date(obj: dict) -> tuple[datetime | None, str]:
    date, stamp = obj.get("date"), obj.get("timestamp")
    if isinstance(date, str):
        try:
            parsed = datetime.fromisoformat(date)
        except ValueError:
            return None, f"unreadable date {date[:40]!r}"
        return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)), ""
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        try:
            return datetime.fromtimestamp(stamp, UTC), ""
        except (OverflowError, OSError, ValueError):
            return None, "unreadable timestamp"
    return None, ""


def _why_malformed(raw: bytes, exc: Exception) -> str:
    if "utf-8" in str(exc).lower():
        return "invalid UTF-8"
    if raw.find(GLUE_MARK, 1) > 0:
        return "glued line: an unfinished write was followed by another entry"
    return "malformed JSON"


def salvage(raw_preview: str) -> str:
    """The entry glued onto crash residue, as the formats doc suggests recovering it."""
    at = raw_preview.rfind('{"id": ')
    return raw_preview[at:] if at > 0 else ""


def _unreadable(raw: bytes, pos: int, offset: int, problem: str) -> Entry:
    return unreadable(pos, offset, len(raw), problem, preview(raw))


def big_line(head: bytes, pos: int, offset: int, length: int) -> Entry:
    """A line too long to parse, indexed by what its head says (Bub writes `id` and `kind` first)."""
    m = _HEAD.match(head)
    why = _headless(m, length)
    if why:
        return unreadable(pos, offset, length, why, preview(head))
    entry = too_big(head, pos, offset, length)
    entry.id, entry.kind = int(m[1]), m[2].decode()
    entry.is_error = entry.kind == "error"
    return entry


def _headless(m: re.Match | None, length: int) -> str:
    """Why a line too long to read whole is no entry, from its head; "" when its head makes one."""
    whole = f"a line of {length:,} bytes, too long to read whole,"
    if m is None:
        return f"{whole} that does not begin with an entry's id and kind"
    if len(m[1].lstrip(b"-")) > 18 or not FIRST_ID <= int(m[1]) <= LAST_ID:
        return f"{whole} whose id is past 64 bits"
    return ""


def too_big(head: bytes, pos: int, offset: int, length: int) -> Entry:
    """An entry too big to parse for display: its first bytes, marked truncated."""
    return Entry(
        pos=pos,
        offset=offset,
        length=length,
        id=None,
        kind="",
        truncated=True,
        preview=preview(head, limit=DISPLAY_PREVIEW_BYTES),
    )


def preview(raw: bytes, limit: int = PREVIEW_BYTES) -> str:
    """A safe, bounded text of raw bytes."""
    text = raw[:limit].decode("utf-8", errors="replace").rstrip("\n")
    return text + ("…" if len(raw) > limit else "")
