"""What the model would be given after an anchor, built with the agent's own rules."""

from __future__ import annotations

from dataclasses import dataclass

from tapeview.sources import ContextMessage, reader

from .models import Anchor, EntryRow, Tape
from .timeline import read_rows


class AnchorNotFound(LookupError):
    pass


@dataclass
class ContextPreview:
    anchor: Anchor | None  # None: the whole tape (no anchor yet)
    messages: list[ContextMessage]
    dropped: int  # entries after the anchor that the model never sees

    @property
    def chars(self) -> int:
        return sum(m.chars for m in self.messages)


def find_anchor(tape: Tape, ref: str | None) -> Anchor | None:
    """The anchor named by `ref` (a position, or a name: its last occurrence); default the last one."""
    anchors = Anchor.objects.filter(tape=tape)
    if not ref:
        return anchors.order_by("-pos").first()
    found = anchors.filter(pos=int(ref)).first() if ref.isascii() and ref.isdigit() else None
    found = found or anchors.filter(name=ref).order_by("-pos").first()
    if found is None:
        raise AnchorNotFound(f"no anchor {ref!r} on this tape")
    return found


def preview(tape: Tape, ref: str | None = None) -> ContextPreview:
    source = reader(tape.kind)
    anchor = find_anchor(tape, ref)
    rows = EntryRow.objects.filter(tape=tape).order_by("pos")
    if anchor is not None:
        # Strictly after the anchor: the anchor itself is not context (formats/bub.md §2.3).
        rows = rows.filter(pos__gt=anchor.pos)
    entries = read_rows(tape, list(rows))
    messages = source.context_messages(entries)
    used = {m.source_pos for m in messages}
    dropped = sum(1 for e in entries if e.pos not in used)
    return ContextPreview(anchor, messages, dropped)
