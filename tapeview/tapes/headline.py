"""An entry in one line, for a terminal: what was said, called or answered, as the API hands it out."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from tapeview.sources import Entry, Reader
from tapeview.sources.model import content_text

from .transcript import arguments_text, output_text

WIDTH = 200  # characters of a summary; the rest of the entry is a `tapeview show --json` away


def line(source: Reader, e: dict[str, Any]) -> str:
    """`pos  time  kind  summary` of an entry shaped as the API's EntryOut."""
    when = _date(e.get("date"))
    shown = when.strftime("%Y-%m-%d %H:%M:%S") if when else "(time unknown)"  # UTC, as the API's
    flag = "[error] " if e.get("error") else ""
    return f"{e['pos']:>7}  {shown:<19}  {e['kind']:<11}  {flag}{summary(source, e)}"


def summary(source: Reader, e: dict[str, Any]) -> str:
    if not e.get("readable", True):
        return _one_line(f"unreadable: {e.get('problem', '')} {e.get('preview', '')}")
    if e.get("truncated"):
        return _one_line(f"{e.get('name', '')} {e.get('preview', '')}")
    payload = e.get("payload")
    fields = payload if isinstance(payload, dict) else {}
    kind, name = e["kind"], e.get("name") or ""
    entry = Entry(pos=e["pos"], offset=0, length=0, id=e.get("id"), kind=kind, name=name, payload=payload)
    if kind == "anchor":
        return _one_line(name)
    if kind in ("message", "system"):
        return _one_line(f"{name or kind}: {content_text(fields.get('content'))}")
    if kind == "tool_call":
        calls = [f"{c['name']}({arguments_text(c['arguments'])})" for c in source.tool_calls(entry)]
        return _one_line(" ".join([content_text(fields.get("content")), *calls]))
    if kind == "tool_result":
        results = [
            ("failed: " if r.get("is_error") else "") + output_text(r["content"], bool(r.get("is_error")))
            for r in source.tool_results(entry)
        ]
        return _one_line("; ".join(results))
    # An event's payload repeats its name beside its data (Bub's {"name", "data"}): the data alone.
    data = fields["data"] if fields.get("name") == name and "data" in fields else payload
    return _one_line(f"{name} {_json(data) if data not in (None, {}, '') else ''}")


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer past 64 bits
        return str(value)


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= WIDTH else flat[: WIDTH - 1] + "…"


def _date(value: object) -> datetime | None:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    return value.astimezone(UTC) if value.tzinfo else value
