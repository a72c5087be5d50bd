"""Entries as text a person reads: tool output with its real newlines, and a Markdown transcript."""

from __future__ import annotations

import re
from typing import Any

import orjson

from tapeview.sources import Entry, Reader, bub_next
from tapeview.sources.model import content_text

_BACKTICKS = re.compile(r"`{3,}")


def output_text(content: Any, failed: bool = False) -> str:
    """A tool's output as text: a string as it is, a structure as an indented outline.

    A failure's message is often an exception's repr with its newlines escaped
    (`RuntimeError('code 128\\noutput:\\nfatal: ...')`): shown on lines of their own.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return _leaf(content, failed)
    if isinstance(content, dict | list):
        try:
            return "\n".join(_outline(content, 0, failed))
        except RecursionError:  # nested ~1,000 deep (a hostile file)
            return "(not shown: nested too deeply)"
    return _scalar(content)


def arguments_text(arguments: Any) -> str:
    """A call's arguments: stored as a JSON string, shown decoded and indented when they decode."""
    if isinstance(arguments, str):
        try:
            arguments = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    if isinstance(arguments, str):
        return arguments
    try:
        return orjson.dumps(arguments, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return repr(arguments)


def _leaf(text: str, failed: bool) -> str:
    return text.replace("\\n", "\n") if failed and "\n" not in text else text


def _scalar(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer past 64 bits
        return str(value)


def _outline(value: Any, depth: int, failed: bool) -> list[str]:
    pad = "  " * depth
    items = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    lines: list[str] = []
    for key, item in items:
        head = f"{pad}{key}:" if key is not None else f"{pad}-"
        if isinstance(item, dict | list) and item:
            lines.append(head)
            lines += _outline(item, depth + 1, failed)
            continue
        text = _leaf(item, failed) if isinstance(item, str) else _scalar(item)
        first, *rest = text.split("\n")
        lines.append(f"{head} {first}")
        lines += [f"{pad}  {line}" for line in rest]
    return lines


def fence(text: str, lang: str = "") -> str:
    """A fenced code block that no run of backticks inside the text can close."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=2)
    ticks = "`" * (longest + 1)
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}\n\n"


def heading(title: str, e: Entry) -> str:
    when = f" — {e.date.isoformat()}" if e.date else ""
    return f"### {title}{when} · #{e.pos}\n\n"


def entry_markdown(source: Reader, e: Entry) -> str:
    """One entry of a transcript: messages and tool calls with their results; other events only
    where they failed (the JSONL export has every line)."""
    if e.truncated or not e.readable:
        why = "too big for the transcript" if e.truncated else e.problem
        return f"> #{e.pos}: {why} ({e.length:,} bytes; see the JSONL export)\n\n"
    payload = e.payload if isinstance(e.payload, dict) else {}
    if e.kind == "anchor":
        return f"---\n\n## ⚓ {_line(e.name)}{' (failed)' if e.is_error else ''} · #{e.pos}\n\n"
    if e.kind in ("message", "system"):
        role = e.name or e.kind
        return heading(_line(role), e) + content_text(payload.get("content")).strip() + "\n\n"
    if e.kind == "tool_call":
        parts = [heading("tool call", e)]
        said = content_text(payload.get("content")).strip()
        if said:
            parts.append(said + "\n\n")
        for call in source.tool_calls(e):
            ident = f" ({_line(str(call['id']))})" if call.get("id") else ""
            parts.append(
                f"**{_line(call['name'])}**{ident}\n\n" + fence(arguments_text(call["arguments"]), "json")
            )
        if bub_next.is_next(e):  # Bub's next format keeps a step's results with its calls
            parts += _results(source, e)
        return "".join(parts)
    if e.kind == "tool_result":
        return "".join([heading("tool result", e), *_results(source, e)])
    if e.is_error:
        return heading(f"{_line(e.kind)} {_line(e.name)}".strip() + " (failed)", e) + fence(
            output_text(payload, True)
        )
    return ""


def _line(text: str) -> str:
    """A name on a heading line: one line, whatever the agent wrote."""
    return " ".join(str(text).split())[:300]


def _results(source, e: Entry) -> list[str]:
    parts = []
    for result in source.tool_results(e):
        ident = f" ({_line(str(result['call_id']))})" if result.get("call_id") else ""
        label = "failed" if result.get("is_error") else "result"
        parts.append(f"**{label}**{ident}\n\n" + fence(output_text(result["content"], result["is_error"])))
    return parts
