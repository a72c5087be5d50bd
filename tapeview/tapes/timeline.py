"""The timeline of one tape: a page of entries read by byte offset, tools paired."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from tapeview.sources import Entry, bub_next, reader

from . import archive, copy_reader, pictures
from . import rows as index_rows
from .blocks import Block, Item, arrange, turn_before
from .models import Tape
from .rows import Match, Row, Rows

PAGE_SIZE = 50
TURN_KINDS = ("message", "tool_call", "tool_result")
MAX_RESULTS = 64
LEAD = 5  # entries shown before a jumped-to position, for context
# The timeline narrowed to what a count of the tape counts (`?errors=1`, ...): find_rows' filters.
ONLY: dict[str, dict] = {
    "errors": {"errors": True},  # Tape.errors counts the rows flagged is_error
    "anchors": {"anchored": True},  # Tape.anchors: the rows flagged as anchors, of every family
    "unreadable": {"readable": False},  # Tape.unreadable
}


@dataclass
class Page:
    items: list[Item]
    first_pos: int | None
    last_pos: int | None
    has_older: bool
    has_newer: bool
    tail: Entry | None  # an unfinished last line, shown at the end
    boundary_after: int | None = None  # everything on the page is archived: draw the boundary last
    blocks: list[Block] = field(default_factory=list)  # the items grouped in turns and folds
    index: Rows | None = None  # the tape's rows as this page read them: for the page's other questions


def find_rows(
    tape: Tape,
    *,
    after: int | None = None,
    before: int | None = None,
    kinds: Sequence[str] = (),
    errors: bool | None = None,
    readable: bool | None = None,
    anchored: bool = False,
    limit: int = PAGE_SIZE,
    last: bool = False,
    index: Rows | None = None,
) -> list[Row]:
    """Up to `limit` rows with after < pos < before, of these kinds (default all), in file order; with
    `errors` only those counted (or not) as errors, `readable` (un)readable lines, `anchored` anchors.

    The first `limit` of them, or with `last` the last `limit` (the page that ends at `before`);
    asked of `index` (a snapshot of the tape's rows) when given.
    """
    rows = (index or index_rows.of(tape)).after(after).before(before)
    rows = rows.where(kinds=tuple(kinds), errors=errors, readable=readable, anchored=anchored or None)
    return rows.tail(limit) if last else rows.head(limit)


def rows_for(
    tape: Tape,
    *,
    after: int | None = None,
    before: int | None = None,
    at: int | None = None,
    end: bool = False,
    size: int = PAGE_SIZE,
    only: str = "",
    index: Rows | None = None,
) -> list[Row]:
    """The rows of one timeline page: after a position, before one, around one (`at`), or at the end;
    with `only` (a key of ONLY), of those rows alone."""
    where = {**ONLY.get(only, {}), "index": index}
    if end:
        return find_rows(tape, limit=size, last=True, **where)
    if before is not None:
        return find_rows(tape, before=before, limit=size, last=True, **where)
    if at is not None:
        lead = find_rows(tape, before=at, limit=LEAD, last=True, **where)
        after = lead[0].pos - 1 if lead else at - 1
    return find_rows(tape, after=after, limit=size, **where)


def error_steps(
    tape: Tape, *, at: int | None, first: int | None, index: Rows | None = None
) -> tuple[int | None, int | None]:
    """The errors before and after where the reader is: the entry jumped to (`at`), else the page
    that starts at `first` (its own first error is the next one)."""
    if at is None and first is None:
        return None, None
    here = at if at is not None else first
    before = find_rows(tape, before=here, errors=True, limit=1, last=True, index=index)
    after = find_rows(tape, after=here if at is not None else here - 1, errors=True, limit=1, index=index)
    return (before[0].pos if before else None), (after[0].pos if after else None)


def anchor_ends(tape: Tape, positions: list[int], index: Rows | None = None) -> dict[int, int | None]:
    """For anchors at these positions, where their segment ends: the next anchor (None: the end)."""
    if not positions:
        return {}
    start = min(positions)
    # Of every family: nanobot's anchors are rows that stay messages (flagged, not of kind "anchor").
    anchors = find_rows(tape, after=start, anchored=True, limit=len(positions) + 1, index=index)
    following = [r.pos for r in anchors]
    ordered = sorted(set(positions) | set(following))
    return {pos: next((p for p in ordered if p > pos), None) for pos in positions}


def anchors_of(page: Page) -> list[int]:
    """The positions of the page's anchors: anchor lines, and rows that also are anchors (nanobot's)."""
    return [i.entry.pos for i in page.items if i.entry.is_anchor or i.entry.anchor]


def read_rows(tape: Tape, rows: list[Row]) -> list[Entry]:
    """Read exactly the bytes of these entries; a too-big entry keeps the index's kind and name."""
    with copy_reader.reading(tape.host):  # another host's file: its copy in the database
        entries = reader(tape.kind).read_entries(Path(tape.path), [(r.pos, r.offset, r.length) for r in rows])
    by_pos = {r.pos: r for r in rows}
    out = []
    for e in entries:
        if e.truncated:
            r = by_pos[e.pos]
            e = Entry(
                pos=e.pos,
                offset=e.offset,
                length=e.length,
                id=r.entry_id,
                kind=r.kind,
                name=r.name,
                date=r.date,
                readable=r.readable,
                preview=e.preview,
                truncated=True,
                is_error=r.is_error,
                context=r.context,
                problem=e.problem,
            )
        out.append(e)
    return out


def page(tape: Tape, only: str = "", **where) -> Page:
    index = pictures.snapshot(tape)  # rows.snapshot, what an append leaves of it kept
    rows = rows_for(tape, only=only, index=index, **where)
    entries = read_rows(tape, rows)
    items = _pair(index, tape, [Item(e) for e in entries])
    first = rows[0].pos if rows else None
    last = rows[-1].pos if rows else None
    narrow = {**ONLY.get(only, {}), "index": index}
    newer = bool(rows) and bool(find_rows(tape, after=last, limit=1, **narrow))
    # The nearest older row, not the first of the tape: its chunk is the one open already.
    older = bool(rows) and bool(find_rows(tape, before=first, limit=1, last=True, **narrow))
    tail = None
    if not newer and tape.pending_bytes and not only:
        with copy_reader.reading(tape.host):
            tail = reader(tape.kind).unfinished_tail(Path(tape.path), tape.indexed_offset, tape.next_pos)
    boundary = archive.mark(tape, index, items) if not only else None
    if only or first is None:
        blocks = [Block("item", item) for item in items]
    else:
        # Counted over every row before the page: kept across appends, which leave those alone.
        turns = pictures.prefix_cached(
            "turn-before",
            tape,
            lambda: turn_before(tape, first, index),
            (first,),
            pictures.generation_of(tape, index),
        )
        blocks = arrange(items, *turns)
    return Page(
        items,
        first,
        last,
        older,
        newer,
        tail,
        boundary if boundary and not newer and boundary > (last or 0) else None,
        blocks,
        index,
    )


def first_at(tape: Tape, when: datetime) -> int | None:
    """The position of the first entry at or after `when` (entries without a time are passed over)."""
    return index_rows.of(tape).where(since=when).first_pos()


def _following_results(index: Rows, tape: Tape, pos: int) -> list[Entry]:
    """The tool_result entries that answer the tool_call at `pos`, read through the index."""
    rows = index.after(pos).where(kinds=TURN_KINDS).head(MAX_RESULTS)
    found = []
    for row in rows:
        if row.kind != "tool_result":
            break
        found.append(row)
    return read_rows(tape, found)


def _preceding_call(index: Rows, tape: Tape, pos: int) -> Entry | None:
    turn = Match(kinds=TURN_KINDS, not_kinds=("tool_result",))
    row = index.before(pos).where(turn).last()
    return read_rows(tape, [row])[0] if row is not None and row.kind == "tool_call" else None


def _pair(index: Rows, tape: Tape, items: list[Item]) -> list[Item]:
    """Pair every tool_call with the tool_result entries that follow it, on this page or beyond.

    Bub writes one tool_result per call batch; nanobot one per call; both end at the next
    message or tool_call.
    """
    source = reader(tape.kind)
    call: Item | None = None
    answered: list[Item] = []
    for item in [*items, None]:
        e = item.entry if item else None
        if e is not None and (not e.readable or e.truncated or e.kind not in TURN_KINDS):
            continue
        if e is not None and e.kind == "tool_result":
            if call is None:
                preceding = _preceding_call(index, tape, e.pos)
                item.call_pos = preceding.pos if preceding else None
                item.results = _match(source, preceding, [e])
            else:
                item.call_pos, item.folded = call.entry.pos, True
                answered.append(item)
            continue
        if call is not None:
            results = (
                [a.entry for a in answered] if answered else _following_results(index, tape, call.entry.pos)
            )
            call.result_pos = results[0].pos if results else None
            call.calls = _match(source, call.entry, results)
        call = item if e is not None and e.kind == "tool_call" else None
        answered = []
    return items


def _match(source, call: Entry | None, answers: list[Entry]) -> list[dict]:
    """Calls and results side by side: by call id where the agent keeps one, else by position."""
    calls = source.tool_calls(call) if call and not call.truncated else []
    if not answers and call is not None and bub_next.is_next(call):
        answers = [call]  # Bub's next format keeps a step's results with its calls
    results = [r for a in answers if not a.truncated for r in source.tool_results(a)]
    # An id the agent wrote as a list or an object pairs nothing (and never breaks the page).
    by_id = {r["call_id"]: r for r in results if isinstance(r.get("call_id"), (str, int)) and r["call_id"]}
    pairs = []
    for i, c in enumerate(calls):
        cid = c.get("id") if isinstance(c.get("id"), (str, int)) else None
        r = by_id.get(cid) if by_id else (results[i] if i < len(results) else None)
        pairs.append({"call": c, "result": r})
    paired = {id(p["result"]) for p in pairs if p["result"] is not None}
    pairs += [{"call": None, "result": r} for r in results if id(r) not in paired]
    return pairs
