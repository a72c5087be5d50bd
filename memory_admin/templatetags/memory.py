"""Rendering for the memory pages: Markdown as the agent's user would read it."""

from __future__ import annotations

from django import template
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt

register = template.Library()
# Raw HTML in memory files is shown as text, never rendered: the files are not ours to trust.
_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")


@register.filter
def markdown(text: str) -> str:
    return mark_safe(_md.render(text or ""))
