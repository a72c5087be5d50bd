"""A memory store exported as it is now: a Markdown document to read, or a JSON document to process.

Both come from one dict (`document`), as datasette renders one data dict twice: the JSON is that
dict, the Markdown is its fields in order (long-term text, daily notes by date, entries and pairs
as lists).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from django.utils.text import slugify

from . import versions
from .catalog import refresh_stat
from .kinds import kind_of
from .models import MemoryStore

FORMATS = {"md": "text/markdown; charset=utf-8", "json": "application/json"}
EMPTY = "_empty_"


@dataclass(frozen=True)
class Export:
    body: bytes
    filename: str
    content_type: str


def export(store: MemoryStore, fmt: str) -> Export:
    """The store's current content in `fmt` ("md" or "json"); StoreError if its file cannot be read."""
    doc = document(store)
    body = markdown(doc) if fmt == "md" else json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    name = "-".join(filter(None, (slugify(store.owner), slugify(store.title), slugify(doc["version"][:12]))))
    return Export(body.encode(), f"{name or 'memory'}.{fmt}", FORMATS[fmt])


def document(store: MemoryStore) -> dict:
    """Which store, at which version, from when, and its content's fields as its kind has them."""
    snap = versions.snapshot(store)
    refresh_stat(store)
    adapter = kind_of(store)
    date = adapter.written_at(store, snap)
    return {
        "id": store.key,
        "kind": store.kind,
        "title": store.title,
        "owner": store.owner,
        "source": store.source,
        "version": snap.version,
        "date": date.isoformat() if date else None,
        "content": adapter.export_content(snap),
    }


def markdown(doc: dict) -> str:
    lines = [f"# {doc['title']}", ""]
    lines += [f"- {label}: {doc[label.lower()] or 'unknown'}" for label in HEADER]
    for field, section in SECTIONS.items():
        if field in doc["content"]:
            lines += ["", *section(doc["content"])]
    return "\n".join(lines).rstrip("\n") + "\n"


def _text(content: dict) -> list[str]:
    return ["## Content", "", content["text"].rstrip("\n") or EMPTY]


def _zone(content: dict) -> list[str]:
    lines = ["## Long-term memory", "", content["long_term"].rstrip("\n") or EMPTY, "", "## Daily notes"]
    for day, note in content["daily"].items():
        lines += ["", f"### {day}", "", _without_own_heading(note, day) or EMPTY]
    return lines if content["daily"] else [*lines, "", "_no daily notes_"]


def _entries(content: dict) -> list[str]:
    items = [
        _item(f"{e['content']}\n_keywords: {', '.join(e['keywords']) or 'none'} · updated {e['updated_at']}_")
        for e in content["entries"]
    ]
    return [f"## Entries ({len(items)})", "", *(items or [EMPTY])]


def _pairs(content: dict) -> list[str]:
    items = [_item(f"{_code(p['key'])}: {p['value'] or EMPTY}") for p in content["pairs"]]
    return [f"## Key-value pairs ({len(items)})", "", *(items or [EMPTY])]


def _history(content: dict) -> list[str]:
    items = []
    for h in content["history"]:
        when = " · ".join(str(h[f]) for f in ("cursor", "timestamp", "session_key") if h[f] is not None)
        items.append(_item(f"{when}: {h['content']}" if when else h["content"]))
    return ["## History (newest first)", "", *(items or [EMPTY])]


HEADER = ("Kind", "Owner", "Source", "Version", "Date")
# The content's fields (as each kind's export_content names them) and their sections, in this order.
SECTIONS = {"text": _text, "long_term": _zone, "entries": _entries, "pairs": _pairs, "history": _history}


def _item(text: str) -> str:
    """A list item; its further lines indented so they stay in it."""
    first, *rest = text.rstrip("\n").split("\n") or [""]
    return "\n".join([f"- {first}", *(f"  {line}" if line else "" for line in rest)])


def _code(text: str) -> str:
    """Inline code that holds any backticks the text has."""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _without_own_heading(note: str, day: str) -> str:
    """A note without the `# <day>` line it may start with: the section heading already says it."""
    lines = note.strip("\n").split("\n")
    if lines and lines[0].lstrip("#").strip() == day and lines[0].startswith("#"):
        lines = lines[1:]
    return "\n".join(lines).strip("\n")
