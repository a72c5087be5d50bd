"""Formatting for the tape pages: times, bounded previews, pretty JSON."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from tapeview.sources.model import content_text

register = template.Library()
PREVIEW_CHARS = 3000


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
