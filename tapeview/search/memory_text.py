"""The searchable docs of a memory store's snapshot: one per item (a zone, a history entry, a
yachiyo entry, a kv pair), or the parts of its text. Plain Python (no Django)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .text import LIMIT


@dataclass(frozen=True)
class Doc:
    """One searchable memory item: where it is in its store, its text and its time if it has one."""

    item: str
    text: str
    date: datetime | None = None


def memory_docs(snapshot: Any) -> list[Doc]:
    """A doc per item of a store snapshot (zone texts, history entries, yachiyo entries, kv pairs),
    else docs of its text, each at most LIMIT characters."""
    docs: list[Doc] = []
    for item in snapshot.items:
        if hasattr(item, "long_term") and hasattr(item, "daily"):  # a Bub memory zone: only the current one
            if str(item.version) == snapshot.version:
                docs += _chunks("long_term", item.long_term, item.date)
                docs += [Doc(f"daily {day}", text[:LIMIT], _when(day)) for day, text in item.daily.items()]
        elif hasattr(item, "keywords") and hasattr(item, "content"):  # a yachiyo entry
            text = item.content + "\n" + " ".join(item.keywords)
            docs.append(Doc(str(item.id), text[:LIMIT], _when(item.updated_at)))
        elif hasattr(item, "line") and hasattr(item, "content"):  # a nanobot history entry
            docs.append(Doc(f"line {item.line}", item.content[:LIMIT], _when(item.timestamp)))
        elif hasattr(item, "key") and hasattr(item, "value"):  # an araliya kv pair
            docs.append(Doc(str(item.key), f"{item.key}: {item.value}"[:LIMIT]))
    if not snapshot.items:
        docs = _chunks("", snapshot.text, None)
    return [doc for doc in docs if doc.text.strip()]


def _chunks(item: str, text: str, when: datetime | None) -> list[Doc]:
    """A long text split at line ends into parts of at most LIMIT characters."""
    parts, current, size = [], [], 0
    for line in text.splitlines(keepends=True):
        if current and size + len(line) > LIMIT:
            parts.append("".join(current))
            current, size = [], 0
        current.append(line[:LIMIT])
        size += min(len(line), LIMIT)
    if current:
        parts.append("".join(current))
    if len(parts) <= 1:
        return [Doc(item, part, when) for part in parts]
    return [Doc(f"{item} part {n}".strip(), part, when) for n, part in enumerate(parts, 1)]


def _when(value: object) -> datetime | None:
    """A time as a store writes it (ISO, with `Z`, or naive local time as nanobot does)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.astimezone()
