"""The timeline of one tape: a page of entries read by byte offset, tools paired, phases counted."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .models import Anchor, Tape
from .models import Entry as Row
from .sources import Entry, reader

PAGE_SIZE = 50
LEAD = 5  # entries shown before a jumped-to position, for context


@dataclass
class Item:
    """One entry as the timeline shows it."""

    entry: Entry
    calls: list[dict] = field(default_factory=list)  # for tool_call: each call with its result
    results: list[dict] = field(default_factory=list)  # for tool_result: each result with its call
    call_pos: int | None = None  # for tool_result: where its call is
    result_pos: int | None = None  # for tool_call: where its results are
    folded: bool = False  # a tool_result already shown with its call on this page
    boundary: str = ""  # a family boundary drawn before this entry


@dataclass
class Page:
    items: list[Item]
    first_pos: int | None
    last_pos: int | None
    has_older: bool
    has_newer: bool
    tail: Entry | None  # an unfinished last line, shown at the end


def rows_for(
    tape: Tape,
    *,
    after: int | None = None,
    before: int | None = None,
    at: int | None = None,
    end: bool = False,
    size: int = PAGE_SIZE,
) -> list[Row]:
    rows = Row.objects.filter(tape=tape)
    if end:
        return list(reversed(rows.order_by("-pos")[:size]))
    if before is not None:
        return list(reversed(rows.filter(pos__lt=before).order_by("-pos")[:size]))
    if at is not None:
        lead = list(rows.filter(pos__lt=at).order_by("-pos").values_list("pos", flat=True)[:LEAD])
        after = (lead[-1] - 1) if lead else at - 1
    return list(rows.filter(pos__gt=after or 0).order_by("pos")[:size])


def read_rows(tape: Tape, rows: list[Row]) -> list[Entry]:
    """Read exactly the bytes of these entries; a too-big entry keeps the index's kind and name."""
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
            )
        out.append(e)
    return out


def page(tape: Tape, **where) -> Page:
    rows = rows_for(tape, **where)
    entries = read_rows(tape, rows)
    items = _pair(tape, [Item(e) for e in entries])
    first = rows[0].pos if rows else None
    last = rows[-1].pos if rows else None
    newer = bool(rows) and Row.objects.filter(tape=tape, pos__gt=last).exists()
    older = bool(rows) and Row.objects.filter(tape=tape, pos__lt=first).exists()
    tail = None
    if not newer and tape.pending_bytes:
        tail = reader(tape.kind).unfinished_tail(Path(tape.path), tape.indexed_offset, tape.next_pos)
    boundaries = getattr(reader(tape.kind), "boundaries", None)
    if boundaries:
        marks = boundaries(tape, entries)
        for item in items:
            item.boundary = marks.get(item.entry.pos, "")
    return Page(items, first, last, older, newer, tail)


def _neighbour(tape: Tape, pos: int, kind: str, *, forward: bool) -> Entry | None:
    rows = Row.objects.filter(tape=tape, kind__in=("tool_call", "tool_result"))
    rows = rows.filter(pos__gt=pos).order_by("pos") if forward else rows.filter(pos__lt=pos).order_by("-pos")
    row = rows.first()
    if row is None or row.kind != kind:
        return None
    return read_rows(tape, [row])[0]


def _pair(tape: Tape, items: list[Item]) -> list[Item]:
    """Pair every tool_call with the tool_result that follows it, on this page or beyond."""
    source = reader(tape.kind)
    last_call: Item | None = None
    for item in items:
        e = item.entry
        if not e.readable or e.truncated:
            continue
        if e.kind == "tool_call":
            last_call = item
        elif e.kind == "tool_result":
            call = last_call.entry if last_call else _neighbour(tape, e.pos, "tool_call", forward=False)
            item.call_pos = call.pos if call else None
            item.results = _match(source, call, e)
            if last_call is not None:
                last_call.result_pos, last_call.calls = e.pos, item.results
                item.folded = True
            last_call = None
    for item in items:
        e = item.entry
        if e.kind == "tool_call" and e.readable and not e.truncated and item.result_pos is None:
            result = _neighbour(tape, e.pos, "tool_result", forward=True)
            item.result_pos = result.pos if result else None
            item.calls = _match(source, e, result)
    return items


def _match(source, call: Entry | None, result: Entry | None) -> list[dict]:
    """Calls and results side by side: by call id where the agent keeps one, else by position."""
    calls = source.tool_calls(call) if call and not call.truncated else []
    results = source.tool_results(result) if result and not result.truncated else []
    by_id = {r["call_id"]: r for r in results if r.get("call_id")}
    pairs = []
    for i, c in enumerate(calls):
        r = by_id.get(c.get("id")) if by_id else (results[i] if i < len(results) else None)
        pairs.append({"call": c, "result": r})
    paired = {id(p["result"]) for p in pairs if p["result"] is not None}
    pairs += [{"call": None, "result": r} for r in results if id(r) not in paired]
    return pairs


def phases(tape: Tape) -> tuple[int, list[Anchor]]:
    """Entries before the first phase anchor, and every phase anchor with its entry count."""
    anchors = list(Anchor.objects.filter(tape=tape, phase=True))
    counted = sum(a.entries for a in anchors) + len(anchors)
    return max(0, tape.entries - counted), anchors
