"""What the model would be given after an anchor, built with the agent's own rules.

`preview()` builds the whole context (the API's answer). The page shows it a page at a time
(`page()`) with its totals (`summarize()`), both bounded for a Bub tape of any length: a page
reads only its own entries (and, for tool results, the call they answer), and the totals of a
context too long to read whole come from the index (see `Totals`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tapeview.sources import ContextMessage, Entry, reader
from tapeview.sources.bub_lines import DISPLAY_PARSE_LIMIT

from . import rows as index_rows
from .lookup import MAX_POS
from .models import Anchor, Tape
from .rows import Match, Rows
from .timeline import read_rows

PAGE_ENTRIES = 50  # a page holds the messages of this many entries
# A context after an anchor with at most this many entries and bytes is read whole: its totals are
# exact. Past either, the totals of a Bub tape come from the index (and a page reads only its own).
EXACT_ROWS = 1_000
EXACT_BYTES = 2 * 1024 * 1024
# Bub's context selector maps each entry on its own (a tool result takes its names from the call
# before it), so a page of entries gives the same messages as the whole context does. Other
# families' rules look at the whole session (nanobot drops what comes before an orphan result,
# araliya keeps the last 20, yachiyo replays the last prompt) and their files are read whole anyway.
PAGED = ("bub",)
SENT_KINDS = ("message", "tool_call", "tool_result", "anchor")  # the Bub entries that become messages


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


@dataclass
class Totals:
    """The whole context after an anchor, counted without reading every entry of a long one.

    Exact (`exact`): `messages` and `chars` as the full read finds them. Counted from the index: those
    are None, `sent` counts the entries that become messages (one message each, a tool result one
    per result) and `span` the bytes of every line after the anchor, events included.
    """

    anchor: Anchor | None
    exact: bool
    messages: int | None
    chars: int | None
    sent: int  # entries that become messages
    rows: int  # entries after the anchor
    span: int  # bytes of the tape after the anchor
    tokens: int | None = None  # prompt tokens the agent reported for this very context

    @property
    def dropped(self) -> int:
        return max(0, self.rows - self.sent)


@dataclass
class ContextPage:
    totals: Totals
    messages: list[ContextMessage]
    first_pos: int | None
    last_pos: int | None
    has_older: bool
    has_newer: bool

    @property
    def anchor(self) -> Anchor | None:
        return self.totals.anchor


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
    anchor = find_anchor(tape, ref) if until is None else _anchor_before(tape, until)
    entries = read_rows(tape, _after(tape, anchor, until).all())
    messages = _messages(tape, entries)
    used = {m.source_pos for m in messages}
    return ContextPreview(anchor, messages, sum(1 for e in entries if e.pos not in used))


def summarize(tape: Tape, ref: str | None = None, until: int | None = None) -> Totals:
    """The totals of the context after an anchor (or as it was after entry `until`), bounded."""
    anchor = find_anchor(tape, ref) if until is None else _anchor_before(tape, until)
    return _totals(tape, anchor, _after(tape, anchor, until), until)


def page(
    tape: Tape,
    ref: str | None = None,
    *,
    after: int | None = None,
    before: int | None = None,
    end: bool = False,
    size: int = PAGE_ENTRIES,
) -> ContextPage:
    """One page of the context after an anchor: the messages of `size` entries after the entry at
    `after`, before the one at `before`, the last ones (`end`), or the first ones; and its totals."""
    anchor = find_anchor(tape, ref)
    rows = _after(tape, anchor, None)
    if tape.kind not in PAGED:
        messages = _messages(tape, read_rows(tape, rows.all()))
        totals = _exact(anchor, messages, *_bounds(tape, rows), _reported(tape, anchor, None))
        return _slice(totals, messages, after, before, end, size)
    totals = _totals(tape, anchor, rows, None)
    sent = _sent(rows)
    picked = sent.before(before).tail(size) if end or before is not None else sent.after(after).head(size)
    if not picked:
        return ContextPage(totals, [], None, None, False, False)
    first, last = picked[0].pos, picked[-1].pos
    read = read_rows(tape, _call_before(sent, picked) + picked)
    messages = [m for m in _messages(tape, read) if m.source_pos >= first]
    # The context's own first and last, each walked to from its end of the positions: an exists()
    # over a range may scan every row of a long context instead.
    return ContextPage(totals, messages, first, last, sent.first_pos() < first, sent.last_pos() > last)


def _after(tape: Tape, anchor: Anchor | None, until: int | None) -> Rows:
    rows = index_rows.of(tape).through(until)
    return rows.starting(_first_pos(tape, anchor)) if anchor is not None else rows


def _first_pos(tape: Tape, anchor: Anchor) -> int:
    # Strictly after an anchor line: the anchor itself is not context (formats/bub.md §2.3). A
    # row that only marks a phase start (nanobot's archive pointer, a summary checkpoint) is
    # a message the agent replays: it is the context's first.
    line = index_rows.of(tape).starting(anchor.pos).through(anchor.pos).where(kinds=("anchor",)).exists()
    return anchor.pos + 1 if line else anchor.pos


def _sent(rows: Rows) -> Rows:
    """The rows of a Bub context that become messages: what its selector keeps, and every entry too
    big to parse (shown as its size in place, whatever it is)."""
    keeps = Match(readable=True, context=True, kinds=SENT_KINDS)
    return rows.any_of(keeps, Match(longer_than=DISPLAY_PARSE_LIMIT))


def _call_before(sent: Rows, picked: list[index_rows.Row]) -> list[index_rows.Row]:
    """The tool call a page's first results answer, when it is on an earlier page (Bub names each
    result after the call of the latest tool_call entry it can parse)."""
    kinds = [r.kind for r in picked if r.length <= DISPLAY_PARSE_LIMIT]
    if "tool_result" not in kinds or "tool_call" in kinds[: kinds.index("tool_result")]:
        return []
    call = Match(kinds=("tool_call",), at_most=DISPLAY_PARSE_LIMIT, readable=True, context=True)
    return sent.before(picked[0].pos).where(call).tail(1)


def _messages(tape: Tape, entries: list[Entry]) -> list[ContextMessage]:
    """The family's context of these entries; an entry too big to parse for display is still
    context: it stands in as its size, in place."""
    big = [e for e in entries if e.truncated]
    messages = reader(tape.kind).context_messages([e for e in entries if not e.truncated])
    if big:
        messages = sorted([*messages, *map(_stand_in, big)], key=lambda m: m.source_pos)
    return messages


def _totals(tape: Tape, anchor: Anchor | None, rows: Rows, until: int | None) -> Totals:
    count, span = _bounds(tape, rows)
    tokens = _reported(tape, anchor, until)
    if tape.kind not in PAGED or (count <= EXACT_ROWS and span <= EXACT_BYTES):
        entries = read_rows(tape, (_sent(rows) if tape.kind in PAGED else rows).all())
        return _exact(anchor, _messages(tape, entries), count, span, tokens)
    # Counted by kind alone, never reading the entries: an entry the selector drops for
    # `meta.context=false` or an unreadable line of one of these kinds is counted here.
    sent = rows.where(kinds=SENT_KINDS).count()
    return Totals(anchor, False, None, None, sent, count, span, tokens)


def _bounds(tape: Tape, rows: Rows) -> tuple[int, int]:
    """How many entries these rows are, and the bytes from the first one's start to the last one's end."""
    first, last = rows.first(), rows.last()
    if first is None or last is None:
        return 0, 0
    # A Bub tape's positions have no gaps (every line has a row): no count over the rows needed.
    count = last.pos - first.pos + 1 if tape.kind in PAGED else rows.count()
    return count, last.offset + last.length - first.offset


def _exact(
    anchor: Anchor | None, messages: list[ContextMessage], count: int, span: int, tokens: int | None
) -> Totals:
    sent = len({m.source_pos for m in messages})
    return Totals(anchor, True, len(messages), sum(m.chars for m in messages), sent, count, span, tokens)


def _reported(tape: Tape, anchor: Anchor | None, until: int | None) -> int | None:
    """The prompt tokens the agent last reported since the last anchor, when that is this context."""
    if until is not None or (anchor.pos if anchor else None) != tape.last_anchor_pos:
        return None
    return tape.context_tokens


def _slice(
    totals: Totals,
    messages: list[ContextMessage],
    after: int | None,
    before: int | None,
    end: bool,
    size: int,
) -> ContextPage:
    """A page of a context read whole: the messages of `size` of its entries (a yachiyo prompt's
    recorded messages all come from one entry, so they stay on one page)."""
    positions = sorted({m.source_pos for m in messages})
    if end or before is not None:
        shown = [p for p in positions if before is None or p < before][-size:]
    else:
        shown = [p for p in positions if after is None or p > after][:size]
    if not shown:
        return ContextPage(totals, [], None, None, False, False)
    first, last = shown[0], shown[-1]
    picked = [m for m in messages if first <= m.source_pos <= last]
    return ContextPage(totals, picked, first, last, positions[0] < first, positions[-1] > last)


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
