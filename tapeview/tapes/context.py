"""What the model would be given after an anchor, built with the agent's own rules."""

from __future__ import annotations

from dataclasses import dataclass

from tapeview.sources import ContextMessage, Entry, reader

from .lookup import MAX_POS
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
    pos = _position(ref)
    found = anchors.filter(pos=pos).first() if pos is not None else None
    found = found or anchors.filter(name=ref).order_by("-pos").first()
    if found is None:
        raise AnchorNotFound(f"no anchor {ref!r} on this tape")
    return found


def _position(ref: str) -> int | None:
    """The position `ref` names, if it is one a tape can have."""
    # ASCII digits only: "²" is a digit to str.isdigit() but not to int(). A number too long for
    # a position is a name (that no anchor has), never a query the database refuses.
    if not (ref.isascii() and ref.isdigit() and len(ref) <= len(str(MAX_POS))):
        return None
    pos = int(ref)
    return pos if 1 <= pos <= MAX_POS else None


def preview(tape: Tape, ref: str | None = None, until: int | None = None) -> ContextPreview:
    """The context after an anchor (default the last one); with `until`, as it was after that entry."""
    source = reader(tape.kind)
    anchor = find_anchor(tape, ref) if until is None else _anchor_before(tape, until)
    rows = EntryRow.objects.filter(tape=tape).order_by("pos")
    if until is not None:
        rows = rows.filter(pos__lte=until)
    if anchor is not None:
        # Strictly after an anchor line: the anchor itself is not context (formats/bub.md §2.3). A
        # row that only marks a phase start (nanobot's archive pointer, a summary checkpoint) is
        # a message the agent replays: it is the context's first.
        line = EntryRow.objects.filter(tape=tape, pos=anchor.pos, kind="anchor").exists()
        rows = rows.filter(pos__gt=anchor.pos) if line else rows.filter(pos__gte=anchor.pos)
    entries = read_rows(tape, list(rows))
    # An entry too big to parse for display is still context: it stands in as its size, in place.
    big = [e for e in entries if e.truncated]
    messages = source.context_messages([e for e in entries if not e.truncated])
    if big:
        messages = sorted([*messages, *map(_stand_in, big)], key=lambda m: m.source_pos)
    used = {m.source_pos for m in messages}
    dropped = sum(1 for e in entries if e.pos not in used)
    return ContextPreview(anchor, messages, dropped)


def _anchor_before(tape: Tape, pos: int) -> Anchor | None:
    return Anchor.objects.filter(tape=tape, pos__lte=pos).order_by("-pos").first()


def _stand_in(entry: Entry) -> ContextMessage:
    role = (
        entry.name
        if entry.kind == "message" and entry.name
        else "tool"
        if entry.kind == "tool_result"
        else "assistant"
    )
    text = f"[{entry.length:,} bytes: too big to show here; open entry {entry.pos} or its raw line]"
    return ContextMessage(role, text, entry.pos)
