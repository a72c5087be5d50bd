"""Formatting for the tape pages: times, bounded previews, pretty JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

import orjson
from django import template
from django.contrib.humanize.templatetags.humanize import intcomma
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt

from tapeview.sources.model import content_text
from tapeview.tapes.transcript import output_text

register = template.Library()
PREVIEW_CHARS = 3000
# As memory_admin's Markdown: raw HTML in an agent's message is shown as text, never rendered,
# and no image is fetched because a message names it (it stays a link). A chat message's line
# breaks are meant: kept.
_md = (
    MarkdownIt("commonmark", {"html": False, "linkify": False, "breaks": True})
    .enable("table")
    .enable("strikethrough")
    .disable("image")
)
# Why a family's tapes show no token total, or what the total they show is (formats/*.md).
USAGE_NOTES = {
    "nanobot": "nanobot keeps only its last turn's usage (_last_usage): the tokens of that turn",
    "yachiyo": "yachiyo records no token usage",
    "araliya": "araliya's transcript records no token usage",
}


@register.filter
def when(value: datetime | None) -> str:
    """A UTC time, or "time unknown" for an entry without one (never 1970)."""
    if value is None:
        return mark_safe('<span class="unknown">time unknown</span>')
    return format_html(
        '<time datetime="{}">{}</time>', value.isoformat(), value.strftime("%Y-%m-%d %H:%M:%S")
    )


@register.filter
def pretty(value: Any) -> str:
    """Indented JSON with CJK and emoji left as they are; strings shown as they are."""
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return repr(value)


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


@register.filter
def usage_note(tape: Any) -> str:
    return USAGE_NOTES.get(getattr(tape, "kind", ""), "")


@register.simple_tag
def count(n: int | None, url: str, id: str = "", **params: Any) -> str:
    """A count as a link to what it counts (`url?params`); nothing to show for zero, so no link."""
    ident = format_html(' id="{}"', id) if id else ""
    if not n:
        return format_html('<span class="count"{}>0</span>', ident)
    query = urlencode({k: v for k, v in params.items() if v is not None})
    href = f"{url}?{query}" if query else url
    return format_html('<a class="count" href="{}"{}>{}</a>', href, ident, intcomma(n))
