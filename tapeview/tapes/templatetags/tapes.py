"""Formatting for the tape pages: times, bounded previews, pretty JSON."""

from __future__ import annotations

import json
import unicodedata
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import orjson
from django import template
from django.contrib.humanize.templatetags.humanize import intcomma
from django.template.defaultfilters import slugify, truncatechars
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt

from tapeview.sources.model import content_text
from tapeview.tapes import formats
from tapeview.tapes.models import Tape
from tapeview.tapes.phase_tally import anchor_state
from tapeview.tapes.transcript import output_text

register = template.Library()


@register.filter
def format_note(tape: Any) -> str:
    """What a Bub tape's line format means for its agent (tapes.formats), or ""."""
    return formats.note(tape) if isinstance(tape, Tape) else ""


PREVIEW_CHARS = 3000
SHOWN_DEPTH = 100  # levels of a payload shown on a page (orjson writes 255 at most; json.dumps recurses)
# As memory_admin's Markdown: raw HTML in an agent's message is shown as text, never rendered,
# and no image is fetched because a message names it (it stays a link). A chat message's line
# breaks are meant: kept.
_md = (
    MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True})
    .enable("table")
    .enable("strikethrough")
    .disable("image")
)


@register.filter
def when(value: datetime | None) -> str:
    """A UTC time, or "time unknown" for an entry without one (never 1970)."""
    if value is None:
        return mark_safe('<span class="unknown">time unknown</span>')
    # Nothing in an ISO time needs escaping (and format_html costs more than the rest of a card).
    return mark_safe(f'<time datetime="{value.isoformat()}">{value.strftime("%Y-%m-%d %H:%M:%S")}</time>')


@register.filter
def pretty(value: Any) -> str:
    """Indented JSON with CJK and emoji left as they are; strings shown as they are."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # an integer past 64 bits, or nesting past orjson's 255 levels
        return json.dumps(_shallow(value, SHOWN_DEPTH), indent=2, ensure_ascii=False, default=repr)


def _shallow(value: Any, depth: int) -> Any:
    """`value` with what lies more than `depth` levels down shown as a mark (the raw line has it all)."""
    if not isinstance(value, dict | list) or not value:
        return value
    if depth <= 0:
        return f"… ({len(value)} more, nested deeper: see the raw line)"
    if isinstance(value, dict):
        return {key: _shallow(item, depth - 1) for key, item in value.items()}
    return [_shallow(item, depth - 1) for item in value]


@register.filter
def clip(value: Any, limit: int = PREVIEW_CHARS) -> dict:
    """A bounded preview: the first `limit` characters and how many more there are."""
    text = pretty(value)
    return {"text": text[:limit], "more": max(0, len(text) - limit), "all": len(text)}


@register.filter
def text_of(content: Any) -> str:
    return content_text(content)


@register.filter
def args(arguments: Any) -> Any:
    """Tool-call arguments are a JSON string: show them decoded when they decode."""
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments


@register.filter
def percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


@register.filter
def get(mapping: Any, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def words(value: str) -> str:
    """`channel_delivery` as "channel delivery"."""
    return str(value).replace("_", " ")


@register.filter
def event_body(payload: Any) -> Any:
    """What an event says: Bub's `data`, the inner payload of a yachiyo event, or the payload itself."""
    if not isinstance(payload, dict):
        return payload
    if isinstance(payload.get("data"), dict):
        return payload["data"]
    inner = payload.get("event")
    if isinstance(inner, dict) and "payload" in inner:
        return inner["payload"]
    return payload


@register.filter
def markdown(text: str) -> str:
    """A message's Markdown as HTML; its raw HTML escaped (see _md)."""
    return mark_safe(_md.render(text or ""))


@register.filter
def output(content: Any, failed: bool = False) -> str:
    """A tool's output as text with its real newlines (escaped by the template as any text)."""
    return output_text(content, bool(failed))


@register.simple_tag
def count(n: int | None, url: str, id: str = "", **params: Any) -> str:
    """A count as a link to what it counts (`url?params`); nothing to show for zero, so no link."""
    ident = format_html(' id="{}"', id) if id else ""
    if not n:
        return format_html('<span class="count"{}>0</span>', ident)
    query = urlencode({k: v for k, v in params.items() if v is not None})
    href = f"{url}?{query}" if query else url
    return format_html('<a class="count" href="{}"{}>{}</a>', href, ident, intcomma(n))


def _get(value: Any, key: str) -> Any:
    """`value.key` as a template would look it up in an agent's JSON: "" when it is not there."""
    return value.get(key, "") if isinstance(value, dict) else ""


def _flags(meta: Any) -> list:
    flags = _get(meta, "flags")
    return list(flags) if isinstance(flags, (list, tuple, str)) else []


@register.simple_tag(takes_context=True)
def entry_card(context: template.Context, item: Any, entry: Any) -> dict:
    """What the card of one timeline entry shows, worked out once in Python: its links, classes,
    one-line gist and bounded texts (a template filter per value, fifty cards a page, was most of
    the page's time)."""
    urls = context["urls"]
    pos, payload, kind = entry.pos, entry.payload, entry.kind
    stop = get(context.get("segment_ends"), pos)
    segment = f"?from={pos}&to={stop}" if stop else f"?from={pos}"
    flags = _flags(entry.meta)
    card = {
        "full": f"{urls['entry']}{pos}/",
        "link": f"{urls['timeline']}?at={pos}#e{pos}",
        "context": f"{urls['context']}?anchor={pos}",
        "target": context.get("jump") == pos,
        "date": when(entry.date),
        "flags": [(slugify(f), words(f)) for f in flags],
        "checkpoint": "checkpoint" in flags,
        "jsonl": urls["jsonl"] + segment,
        "md": urls["md"] + segment,
    }
    # A nanobot checkpoint is an anchor card among the anchors alone; on the timeline, a message.
    listed = context.get("only") == "anchors" and entry.anchor_only
    card["anchor_card"] = entry.readable and not entry.truncated and (kind == "anchor" or listed)
    if card["anchor_card"]:
        card["name"] = entry.anchor or entry.name
        state = anchor_state(entry)  # a Bub anchor's own; a nanobot checkpoint's summary (its reader's)
        card["state"] = _truncated(pretty(state), 300) if state else None
        return card
    classes = ["entry", f"k-{slugify(kind)}"]
    classes += [f"n-{slugify(entry.name)}"] if entry.name else []
    classes += ["error"] if entry.is_error else []
    classes += [] if entry.context else ["operational"]
    classes += ["target"] if card["target"] else []
    card["classes"] = " ".join(classes)
    card["pos_href"] = card["full"] if entry.readable or entry.truncated else f"#e{pos}"
    card["gist"] = _gist(item, entry)
    card["result_full"] = f"{urls['entry']}{(item.result_pos if item else None) or pos}/"
    if not entry.readable or entry.truncated:
        return card
    if kind == "message":
        card["text"] = clip(text_of(_get(payload, "content")))
        card["text"]["html"] = markdown(card["text"]["text"])
        summary = (anchor_state(entry) or {}).get("summary") if card["checkpoint"] else None  # latest only
        card["summary"] = {"html": markdown(clip(summary)["text"])} if summary else None
        reasoning = _get(payload, "reasoning_content")
        card["reasoning"] = clip(reasoning)["text"] if reasoning else None
    elif kind == "tool_call":
        said = _get(payload, "content")
        card["said"] = _truncated(text_of(said), PREVIEW_CHARS) if said else None
        card["pairs"] = [_pair(p) for p in item.calls] if item else []
    elif kind == "tool_result":
        card["pairs"] = [_pair(p) for p in item.results] if item else []
    elif kind == "system":
        card["text"] = clip(_get(payload, "content"))
    elif kind == "error":
        details = _get(payload, "details")
        card["details"] = _truncated(pretty(details), PREVIEW_CHARS) if details else None
    elif kind == "event":
        shown = event_body(payload)
        card["event"] = {"summary": _truncated(pretty(shown), 120), **clip(shown, 1500)} if shown else None
    else:
        card["text"] = clip(payload)
    return card


def _pair(pair: dict) -> dict:
    """A call beside its result, bounded."""
    call, result = pair["call"], pair["result"]
    shown = {"call": call, "result": result}
    if call:
        shown["args"] = clip(args(_get(call, "arguments")), 1500)
    if result:
        failed = _get(result, "is_error")
        shown["failed"] = bool(failed)
        shown["output"] = clip(output(_get(result, "content"), failed), PREVIEW_CHARS)
    return shown


def _gist(item: Any, entry: Any) -> str:
    """The one line a compact timeline shows of an entry."""
    payload, kind = entry.payload, entry.kind
    if not entry.readable or entry.truncated:
        return _truncated(entry.preview, 160)
    if kind == "message":
        return _truncated(text_of(_get(payload, "content")), 160)
    if kind == "tool_call":
        return ", ".join(str(_get(p["call"], "name")) for p in (item.calls if item else []))
    if kind == "tool_result":
        if item is not None and item.folded:
            return f"↳ with the call #{item.call_pos}"
        results = item.results if item else []
        parts = []
        for i, p in enumerate(results):
            if p["result"]:
                parts.append(
                    _truncated(output(_get(p["result"], "content"), _get(p["result"], "is_error")), 100)
                )
                parts.append(" · " if i < len(results) - 1 else "")
        return "".join(parts)
    if kind == "error":
        return _truncated(_get(payload, "message"), 160)
    if kind == "event":
        return _truncated(pretty(event_body(payload)), 120)
    return ""


def _truncated(value: Any, length: int) -> str:
    """truncatechars, without walking every character of a text that fits."""
    text = unicodedata.normalize("NFC", str(value))
    return text if len(text) <= length else truncatechars(text, length)
