"""Rendering for the memory pages: Markdown as the agent's user would read it, times as the site shows."""

from __future__ import annotations

from django import template
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt

from tapeview.tapes.templatetags.tapes import when

from .. import versions
from ..kinds.base import parse_time

register = template.Library()
# Raw HTML in memory files is shown as text, never rendered: the files are not ours to trust.
_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")


@register.filter
def markdown(text: str, top: int = 2) -> str:
    """The Markdown as HTML, a `#` heading made an h`top` and the others below it: the page around
    it has its own h1, its only one."""
    tokens = _md.parse(text or "")
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(6, int(token.tag[1:]) + int(top) - 1)}"
    return mark_safe(_md.renderer.render(tokens, _md.options, {}))


# C0 controls but tab and the line ends, and DEL, as their Control Pictures: a binary file's bytes
# must not reach the HTML raw (a NUL there is a parse error, the others invisible).
_PICTURES = {c: 0x2400 + c for c in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20))} | {0x7F: 0x2421}


@register.filter
def visible(text: str) -> str:
    """The text with its control characters shown as symbols (NUL as ␀), not sent to the page raw."""
    return (text or "").translate(_PICTURES)


@register.filter
def stamp(value: object) -> str:
    """A time an agent stored as text, shown as the site shows times; text that is no time, as it is."""
    moment = parse_time(value)
    if moment is not None:
        return when(moment)
    return when(None) if value in (None, "") else str(value)


@register.simple_tag
def listed(store) -> dict:
    """A store's versions, last change and size as its own page shows them (versions.listed)."""
    return versions.listed(store)
