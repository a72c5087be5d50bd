"""`{% load turns %}`: a turn tree's figures, and JSON as a foldable tree of escaped HTML."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()

ITEMS = 2000  # values a tree shows; past them, the raw lines have the rest
CHARS = 20_000  # characters of a string shown
OPEN_DEPTH = 2  # levels shown unfolded
DEPTH = 60  # levels drawn; deeper ones are in the raw lines


@register.filter
def duration(ms: int | None) -> str:
    if ms is None:
        return "–"
    if ms < 1000:
        return f"{ms} ms"
    return f"{ms / 1000:.1f} s" if ms < 60_000 else f"{ms // 60_000} min {ms % 60_000 // 1000} s"


@register.filter
def json_tree(value: Any) -> str:
    """`value` as nested <details> (objects and lists foldable, the first levels open), every key and
    value escaped: the agent's text is shown, never run."""
    out: list[str] = []
    _Tree(out).add(value, 0)
    return mark_safe("".join(out))


class _Tree:
    def __init__(self, out: list[str]) -> None:
        self.out, self.left = out, ITEMS

    def add(self, value: Any, depth: int) -> None:
        self.left -= 1
        if self.left < 0:
            if self.left == -1:
                self.out.append('<span class="sub">… more: see the raw lines</span>')
            return
        if isinstance(value, dict | list) and value and depth >= DEPTH:
            self.out.append('<span class="sub">… nested deeper: see the raw lines</span>')
        elif isinstance(value, dict | list) and value:
            items = value.items() if isinstance(value, dict) else enumerate(value)
            opening = "{" if isinstance(value, dict) else "["
            shown = " open" if depth < OPEN_DEPTH else ""
            self.out.append(f'<details class="json"{shown}><summary>{opening} {len(value)}</summary><dl>')
            for key, item in items:
                self.out.append(f"<div><dt>{escape(str(key))}</dt><dd>")
                self.add(item, depth + 1)
                self.out.append("</dd></div>")
            self.out.append("</dl></details>")
        elif isinstance(value, str):
            more = len(value) - CHARS
            tail = (
                f'<span class="sub"> … {more} more characters (see the raw lines)</span>' if more > 0 else ""
            )
            self.out.append(f'<span class="json-str">{escape(value[:CHARS])}</span>{tail}')
        elif value is None or isinstance(value, bool):
            self.out.append(
                f'<span class="json-lit">{"null" if value is None else str(value).lower()}</span>'
            )
        elif isinstance(value, dict | list):
            self.out.append(f'<span class="json-lit">{"{}" if isinstance(value, dict) else "[]"}</span>')
        else:
            self.out.append(f'<span class="json-num">{escape(str(value))}</span>')
