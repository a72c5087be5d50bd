"""The timeline API of one tape: its entries, anchors, the model's next context, and handoffs."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from ninja import Field, Query, Router, Schema, Status
from pydantic import field_validator

from tapeview.accounts.auth import writer
from tapeview.sources import Entry, reader

from .. import context, handoff, timeline
from ..models import Anchor, EntryRow, Tape
from .cursor import decode, encode
from .schemas import BIG, TEXT, PageIn, responses
from .tapes import tape_of

# A list shows a payload whole up to this many bytes of JSON; past it a preview and `truncated`.
PAYLOAD_LIMIT = 16 * 1024
PREVIEW_CHARS = 2000


class EntryOut(Schema):
    pos: int = Field(description="the line number in the file: stable, and the key of .../entries/{pos}")
    id: int | None = Field(description="the agent's own entry id")
    kind: str
    name: str
    date: datetime | None
    payload: Any = Field(description="null when `truncated` (see `preview`) or unreadable")
    meta: dict[str, Any]
    readable: bool
    truncated: bool = Field(
        description="the payload is too big for a list: ?full=true or .../entries/{pos} give it all, "
        "and .../entries/{pos}/raw the bytes of a line too big to parse"
    )
    preview: str = Field(description="a bounded text of a truncated payload or an unreadable line")
    problem: str


class AnchorOut(Schema):
    pos: int
    name: str
    date: datetime | None
    phase: bool
    state: str = Field(description="a bounded preview of the anchor's state, as JSON text")
    entries: int


class MessageOut(Schema):
    role: str
    content: Any
    source_pos: int
    tool_calls: list[Any] | None
    tool_call_id: str | None
    name: str | None
    chars: int


class ContextOut(Schema):
    anchor: AnchorOut | None = Field(description="null: no anchor yet, the whole tape is context")
    messages: list[MessageOut]
    dropped: int = Field(description="entries after the anchor that the model never sees")
    chars: int


class HandoffIn(Schema):
    name: str = Field(min_length=1, max_length=handoff.MAX_NAME, pattern=r"^[^\n\x00]*$")
    summary: str = Field("", max_length=100_000, pattern=TEXT)
    state: dict[str, Any] | None = None

    @field_validator("state")
    @classmethod
    def plain_json(cls, state: dict[str, Any] | None) -> dict[str, Any] | None:
        # A ValueError here is a 422, not a tape the agent cannot read or an audit row PostgreSQL refuses.
        if "\\u0000" in json.dumps(state, allow_nan=False):
            raise ValueError("the state must not contain NUL characters")
        return state


class HandoffOut(Schema):
    entries: list[EntryOut]


class EntryPageOut(Schema):
    items: list[EntryOut]
    next_cursor: str | None


class AnchorPageOut(Schema):
    items: list[AnchorOut]
    next_cursor: str | None


class EntryFilters(PageIn):
    after: int | None = Field(None, ge=0, le=BIG, description="only entries with pos > after")
    before: int | None = Field(None, ge=1, le=BIG, description="only entries with pos < before")
    kinds: str | None = Field(None, max_length=500, pattern=TEXT, description="comma-separated kinds")
    full: bool = Field(False, description="payloads whole, however big")


router = Router(tags=["tapes"])


def entry_out(e: Entry, full: bool) -> dict:
    payload, truncated, preview = e.payload, e.truncated, e.preview
    if not full and payload is not None:
        try:
            text = orjson.dumps(payload)
        except TypeError:  # an integer past 64 bits: the standard library writes any
            text = json.dumps(payload).encode()
        if len(text) > PAYLOAD_LIMIT:
            payload, truncated = None, True
            preview = text[: PREVIEW_CHARS * 4].decode(errors="ignore")[:PREVIEW_CHARS] + "…"
    return {
        "pos": e.pos,
        "id": e.id,
        "kind": e.kind,
        "name": e.name,
        "date": e.date,
        "payload": payload,
        "meta": e.meta if isinstance(e.meta, dict) else {},
        "readable": e.readable,
        "truncated": truncated,
        "preview": preview,
        "problem": e.problem,
    }


@router.get("/tapes/{tape_id}/entries", response=responses({200: EntryPageOut}, 400, 404))
def list_entries(request: HttpRequest, tape_id: str, filters: Query[EntryFilters]) -> dict:
    """Entries in file order; unreadable lines are there too, with `readable: false` and a preview."""
    tape = tape_of(tape_id)
    rows = EntryRow.objects.filter(tape=tape)
    if filters.after is not None:
        rows = rows.filter(pos__gt=filters.after)
    if filters.before is not None:
        rows = rows.filter(pos__lt=filters.before)
    kinds = [k.strip() for k in (filters.kinds or "").split(",") if k.strip()]
    if kinds:
        rows = rows.filter(kind__in=kinds)
    if filters.cursor:
        rows = rows.filter(pos__gt=decode(filters.cursor, {"pos": int})["pos"])
    page = list(rows.order_by("pos")[: filters.limit + 1])
    more, page = len(page) > filters.limit, page[: filters.limit]
    entries = sorted(timeline.read_rows(tape, page), key=lambda e: e.pos)
    return {
        "items": [entry_out(e, filters.full) for e in entries],
        "next_cursor": encode({"pos": page[-1].pos}) if more else None,
    }


def _row(tape: Tape, pos: int) -> EntryRow:
    row = EntryRow.objects.filter(tape=tape, pos=pos).first() if 1 <= pos <= BIG else None
    if row is None:
        raise Http404(f"no entry {pos} on this tape")
    return row


@router.get("/tapes/{tape_id}/entries/{pos}", response=responses({200: EntryOut}, 404))
def get_entry(request: HttpRequest, tape_id: str, pos: int) -> dict:
    """One entry with all of its payload (past 2 MB a line is not parsed: see .../raw)."""
    tape = tape_of(tape_id)
    return entry_out(timeline.read_rows(tape, [_row(tape, pos)])[0], full=True)


RAW_DOC = {
    200: {"description": "the line's bytes", "content": {"text/plain": {"schema": {"type": "string"}}}}
}


@router.get(
    "/tapes/{tape_id}/entries/{pos}/raw",
    response=responses({}, 404),
    openapi_extra={"responses": RAW_DOC},
)
def get_entry_raw(request: HttpRequest, tape_id: str, pos: int) -> HttpResponse:
    """The entry exactly as it is in the file, streamed; of a JSON document, the entry as JSON."""
    tape = tape_of(tape_id)
    row = _row(tape, pos)
    source = reader(tape.kind)
    if not tape.append_only or not hasattr(source, "read_raw"):
        entry = timeline.read_rows(tape, [row])[0]
        return HttpResponse(orjson.dumps(entry.payload), content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(
        source.read_raw(Path(tape.path), row.offset, row.length), content_type="text/plain; charset=utf-8"
    )
    response["Content-Length"] = str(row.length)
    return response


@router.get("/tapes/{tape_id}/anchors", response=responses({200: AnchorPageOut}, 400, 404))
def list_anchors(request: HttpRequest, tape_id: str, page: Query[PageIn]) -> dict:
    tape = tape_of(tape_id)
    anchors = Anchor.objects.filter(tape=tape)
    if page.cursor:
        anchors = anchors.filter(pos__gt=decode(page.cursor, {"pos": int})["pos"])
    rows = list(anchors.order_by("pos")[: page.limit + 1])
    more, rows = len(rows) > page.limit, rows[: page.limit]
    return {"items": rows, "next_cursor": encode({"pos": rows[-1].pos}) if more else None}


@router.get("/tapes/{tape_id}/context", response=responses({200: ContextOut}, 404))
def get_context(
    request: HttpRequest, tape_id: str, anchor: str | None = Query(None, max_length=300, pattern=TEXT)
) -> dict:
    """What the model would be given after an anchor (a position or a name; default the last one)."""
    tape = tape_of(tape_id)
    if anchor and anchor.isdigit() and not (anchor.isascii() and len(anchor) < 18):
        raise Http404(f"no anchor {anchor!r} on this tape")
    preview = context.preview(tape, anchor or None)
    messages = [
        {
            "role": m.role,
            "content": m.content,
            "source_pos": m.source_pos,
            "tool_calls": m.tool_calls,
            "tool_call_id": m.tool_call_id,
            "name": m.name,
            "chars": m.chars,
        }
        for m in preview.messages
    ]
    return {
        "anchor": preview.anchor,
        "messages": messages,
        "dropped": preview.dropped,
        "chars": preview.chars,
    }


@router.post("/tapes/{tape_id}/handoff", response=responses({201: HandoffOut}, 400, 403, 404, 409))
def create_handoff(request: HttpRequest, tape_id: str, body: HandoffIn) -> Status:
    """Append an anchor and its handoff event while the tape is idle; 409 with Retry-After when busy."""
    actor = writer(request)
    tape = tape_of(tape_id)
    start = tape.next_pos
    written = handoff.write(tape, body.name, actor, summary=body.summary, state=body.state)
    ids = [e["id"] for e in written]
    rows = list(EntryRow.objects.filter(tape=tape, pos__gte=start, entry_id__in=ids).order_by("pos"))
    entries = sorted(timeline.read_rows(tape, rows), key=lambda e: e.pos)
    return Status(201, {"entries": [entry_out(e, full=True) for e in entries]})
