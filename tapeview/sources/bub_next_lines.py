"""One line of a tape in Bub's next format (a CloudEvent whose data is an ATIF step), as an Entry.

Follows ../shared/formats/bub-next.md §2-5: a line is an entry when it passes CloudEvent 1.0 and
Bub's TapeRecord validation; its `type` says what it is, a system fact keeps its payload as a JSON
string in `data.observation.results[0].content`, and position is the id (Bub recomputes
`data.step_id` from it). Entries take the shared vocabulary so one timeline renders every format:
`message` (user, assistant), `system`, `tool_call` (an agent step with tool calls, its results in
the same entry), `anchor`, `error` and `event` (name = the type's name: `model.completed`, ...).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import orjson

from . import python_json
from .bub_lines import NON_PHASE_PREFIXES, preview
from .model import DISPLAY_PREVIEW_BYTES, Entry, unreadable

FORMAT = "bub-next"  # Entry.meta["format"] of every entry read here
PREFIX, SUFFIX = "build.bub.", ".v1"
ANCHOR_TYPE = "build.bub.context.anchor.v1"
# The attributes CloudEvents 1.0 names; every other key of the line is an extension.
ATTRIBUTES = frozenset(
    {"specversion", "id", "source", "type", "datacontenttype", "dataschema", "subject", "time", "data"}
)
_EXTENSION = re.compile(r"[a-z0-9]+")
SOURCES = {"system": "system", "user": "user", "agent": "assistant"}
# What only an agent step may carry (TapeRecord validation, formats/bub-next.md §4).
AGENT_ONLY = ("tool_calls", "model_name", "metrics", "reasoning_effort", "reasoning_content")
# The lines after which the agent writes nothing until its next turn (§5 #13).
TURN_ENDS = frozenset({"agent.invocation.completed", "agent.invocation.failed", "agent.invocation.cancelled"})
STATUS_EVENTS = ("command", "spill.write", "sidecar.archive", "sidecar.reset", "sidecar.merge")
REFUSED = "Bub's next release refuses the whole tape for it"
OLD_LINE_IN_NEXT = "a line in Bub 0.5.1's format in a tape of Bub's next format"
_OLD_HEAD = re.compile(rb'^[ \t\r]*\{[ \t\r]*"id"[ \t\r]*:[ \t\r]*-?\d')
# Bub writes every attribute before `data`, and the step's `step_id` and `source` first in it (§2, §4):
# what a line too long to read whole is can be read from its head.
_DATA = b', "data": {"step_id": '
_STEP_SOURCE = re.compile(rb'-?\d+, "source": "(system|user|agent)"')
_ANCHOR_NAME = re.compile(rb'"content": "\{\\"name\\":\\"([^"\\]*)\\"')


def is_event_line(raw: bytes) -> bool:
    """Whether a line is written in this format (a JSON object with a `specversion`), readable or not."""
    if _OLD_HEAD.match(raw):
        return False
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return False
    return type(obj) is dict and "specversion" in obj


def parse_line(raw: bytes, pos: int, offset: int) -> Entry:
    """One line as Bub's next reader sees it, or an unreadable entry that says why Bub refuses it."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:  # json.loads reads NaN, a lone surrogate, a huge integer
            obj = python_json.fallback(raw)
        except (ValueError, RecursionError):
            return _unreadable(raw, pos, offset, "malformed JSON")
    return parsed_line(python_json.exact(obj, raw), raw, pos, offset)


def big_line(head: bytes, pos: int, offset: int, length: int) -> Entry:
    """A line of `length` bytes too long to read whole (sources.model.SCAN_PARSE_LIMIT), read from
    its `head`: its attributes and its step's source, its content left out (the entry is truncated)."""
    at = head.find(_DATA)
    step = _STEP_SOURCE.match(head, at + len(_DATA)) if at > 0 else None
    try:
        obj = orjson.loads(head[:at] + b"}") if step else None
    except orjson.JSONDecodeError:
        obj = None
    if type(obj) is not dict or "data" in obj:
        why = f"a line of {length:,} bytes, too long to read whole, whose head shows no event's attributes"
        return unreadable(pos, offset, length, why, preview(head))
    obj["data"] = {"source": step[1].decode(), "message": ""}
    e = parsed_line(obj, head, pos, offset)
    e.length = length
    if not e.readable:
        return e
    e.truncated, e.preview = True, preview(head, limit=DISPLAY_PREVIEW_BYTES)
    name = _ANCHOR_NAME.search(head, at) if e.kind == "anchor" else None
    if name is not None:
        e.name = e.payload["name"] = name[1].decode("utf-8", "replace")
        e.phase = not e.name.startswith(NON_PHASE_PREFIXES)
    return e


def parsed_line(obj: object, raw: bytes, pos: int, offset: int) -> Entry:
    """parse_line of a line whose JSON is already parsed (`obj`)."""
    why = invalid(obj)
    if why:
        if type(obj) is dict and type(obj.get("id")) is int and "kind" in obj:
            why = OLD_LINE_IN_NEXT
        return _unreadable(raw, pos, offset, why)
    data = obj["data"]
    etype = obj["type"]
    name = etype[len(PREFIX) : -len(SUFFIX)] if etype.startswith(PREFIX) and etype.endswith(SUFFIX) else etype
    meta: dict[str, Any] = {k: v for k, v in obj.items() if k not in ATTRIBUTES and k != "source"}
    meta["format"], meta["type"], meta["event_id"] = FORMAT, etype, obj["id"]
    date = _date(obj.get("time")) or _date(data.get("timestamp"))
    context = obj.get("bubcontext") is True
    e = Entry(pos=pos, offset=offset, length=len(raw), id=pos, kind="event", date=date, meta=meta)
    e.context = context
    if name == "message":
        _message(e, data)
        return e
    payload = event_payload(data)
    if etype == ANCHOR_TYPE:
        anchor = payload.get("name")
        e.kind, e.name = "anchor", anchor if isinstance(anchor, str) else ""
        state = payload.get("state")
        e.payload = {"name": e.name, "state": state if isinstance(state, dict) else {}}
        e.phase = not e.name.startswith(NON_PHASE_PREFIXES)
        return e
    if name == "error":
        e.kind, e.name, e.payload, e.is_error = "error", "", payload, True
        return e
    e.name, e.payload = name, {"name": name, "data": payload}
    e.is_error = name.endswith(".failed") or (name in STATUS_EVENTS and payload.get("status") == "error")
    if name == "model.completed":
        usage = payload.get("usage")
        if python_json.reports_usage(usage):
            e.tokens, e.prompt_tokens, e.cached_tokens = call_usage(usage)
    return e


def invalid(obj: object) -> str:
    """Why a parsed line is no record Bub's next reader accepts, or "" (CloudEvent 1.0 and TapeRecord)."""
    if type(obj) is not dict:
        return "not an event: the line is not a JSON object"
    if obj.get("specversion") != "1.0":
        return 'not a CloudEvent 1.0: specversion is not "1.0"'
    for key in ("id", "source", "type"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            return f"not a CloudEvent: {key} is not a non-empty string"
    when = obj.get("time")
    if when is not None and _date(when) is None:
        return "not a CloudEvent: time is not a timestamp with its zone"
    bad = next((k for k in obj if k not in ATTRIBUTES and not _EXTENSION.fullmatch(k)), None)
    if bad is not None:
        return f"not a CloudEvent: {bad[:40]!r} is no extension name"
    data = obj.get("data")
    if type(data) is not dict:
        return "not a Bub record: data is not an object"
    source = data.get("source")
    if not isinstance(source, str) or source not in SOURCES:
        return "not a Bub record: data.source is not system, user or agent"
    if "message" not in data:
        return "not a Bub record: data has no message"
    if source == "user" and "observation" in data:
        return "not a Bub record: a user step with an observation"
    if source != "agent":
        extra = next((k for k in AGENT_ONLY if k in data), None)
        if extra:
            return f"not a Bub record: a {source} step with {extra}"
    return ""


def event_payload(data: dict) -> dict:
    """A system fact's payload, as Bub's event_payload reads it: {} if anything is off."""
    observation = data.get("observation")
    results = observation.get("results") if isinstance(observation, dict) else None
    first = results[0] if isinstance(results, list) and results else None
    content = first.get("content") if isinstance(first, dict) else None
    if not isinstance(content, str):
        return {}
    try:
        payload = python_json.loads(content.encode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return {}
    return payload if isinstance(payload, dict) else {}


def call_usage(usage: dict) -> tuple[int, int | None, int]:
    """(total, prompt, cached) tokens of a model call's provider usage."""
    count = python_json.count
    prompt = count(usage.get("prompt_tokens"))
    total = count(usage.get("total_tokens")) or prompt + count(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return total, prompt, cached


def _message(e: Entry, data: dict) -> None:
    role = SOURCES[data["source"]]
    content = data.get("message")
    calls = data.get("tool_calls") if role == "assistant" else None
    if role == "system":
        e.kind, e.name, e.payload = "system", "", {"content": content}
        return
    e.kind, e.name = "message", role
    e.payload = {"role": role, "content": content}
    if role != "assistant":
        return
    model = data.get("model_name")
    if isinstance(model, str) and model:
        e.meta["model_name"] = model
    metrics = data.get("metrics")
    if isinstance(metrics, dict):
        e.payload["metrics"] = metrics
    if isinstance(calls, list) and calls:
        observation = data.get("observation")
        results = observation.get("results") if isinstance(observation, dict) else None
        e.kind, e.name = "tool_call", ""
        e.payload["calls"] = [_call(c) for c in calls]
        # A failed call is counted once, as its own `tool.failed` line, not again as this step.
        e.payload["results"] = results if isinstance(results, list) else []


def _call(call: object) -> dict:
    """An ATIF tool call in the shape of a provider's (`id`, `function.name`, `function.arguments`)."""
    if not isinstance(call, dict):
        return {"id": None, "type": "function", "function": call}
    extra = call.get("extra")
    raw = extra.get("bub_raw_arguments") if isinstance(extra, dict) else None
    arguments = call.get("arguments")
    if not isinstance(raw, str):
        raw = arguments if isinstance(arguments, str) else json_text(arguments)
    name = call.get("function_name")
    function = {"name": name, "arguments": raw} if isinstance(name, str) else call
    return {"id": call.get("tool_call_id"), "type": "function", "function": function}


def is_tool_error(result: object) -> bool:
    """A tool result that is Bub's error dict (`{"kind", "message", ...}`), written as JSON text."""
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, str) or not content.startswith('{"kind":'):
        return False
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return False
    return isinstance(value, dict) and "message" in value


def ends_turn(entry: Entry) -> bool:
    """An entry after which the agent writes nothing until its next turn: the invocation's end."""
    return entry.readable and entry.kind == "event" and entry.name in TURN_ENDS


def _date(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return when.astimezone(UTC) if when.utcoffset() else when.replace(tzinfo=UTC)


def json_text(value: object) -> str:
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return "null"


def _unreadable(raw: bytes, pos: int, offset: int, why: str) -> Entry:
    return unreadable(pos, offset, len(raw), f"{why}: {REFUSED}", preview(raw))
