"""The timeline API of one tape: its entries, anchors and the model's next context (handoffs: handoffs.py)."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from ninja import Field, Query, Router, Schema

from tapeview.sources import Entry

from .. import context, lookup, raw, timeline
from ..models import Anchor
from .cursor import decode, encode
from .schemas import BIG, TEXT, PageIn, responses

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
    error: bool = Field(description="counted in the tape's `errors`: a failed tool call, run or step")


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
    errors: bool | None = Field(
        None, description="true: only the entries counted in the tape's `errors`; false: only the others"
    )
    full: bool = Field(False, description="payloads whole, however big")

    def kind_names(self) -> list[str]:
        return [k.strip() for k in (self.kinds or "").split(",") if k.strip()]


log = logging.getLogger(__name__)
router = Router(tags=["tapes"])


def entry_out(e: Entry, full: bool) -> dict:
    payload, truncated, preview = e.payload, e.truncated, e.preview
    if payload is not None:
        # A payload nested past raw.DEPTH levels (only a hand-made line: the agents' json.dumps
        # stops sooner) is shown as a preview, as a big one is: no JSON answer holds it.
        text, answerable = raw.json_answer(payload)
        if not answerable or (not full and len(text) > PAYLOAD_LIMIT):
            payload, truncated = None, True
            preview = text[: PREVIEW_CHARS * 4].decode(errors="ignore")[:PREVIEW_CHARS] + "…"
    meta = e.meta if isinstance(e.meta, dict) and raw.json_answer(e.meta)[1] else {}
    return {
        "pos": e.pos,
        "id": e.id,
        "kind": e.kind,
        "name": e.name,
        "date": e.date,
        "payload": payload,
        "meta": meta,
        "readable": e.readable,
        "truncated": truncated,
        "preview": preview,
        "problem": e.problem,
        "error": e.is_error,
    }


@router.get("/tapes/{tape_id}/entries", response=responses({200: EntryPageOut}, 400, 404, 503))
def list_entries(request: HttpRequest, tape_id: str, filters: Query[EntryFilters]) -> dict:
    """Entries in file order; unreadable lines are there too, with `readable: false` and a preview."""
    tape = lookup.find_tape(tape_id)
    after = filters.after
    if filters.cursor:
        # The cursor is the last position handed out: the next page starts after both.
        after = max(after or 0, decode(filters.cursor, {"pos": int})["pos"])
    page = timeline.find_rows(
        tape,
        after=after,
        before=filters.before,
        kinds=filters.kind_names(),
        errors=filters.errors,
        limit=filters.limit + 1,
    )
    more, page = len(page) > filters.limit, page[: filters.limit]
    entries = sorted(timeline.read_rows(tape, page), key=lambda e: e.pos)
    return {
        "items": [entry_out(e, filters.full) for e in entries],
        "next_cursor": encode({"pos": page[-1].pos}) if more else None,
    }


@router.get("/tapes/{tape_id}/entries/{pos}", response=responses({200: EntryOut}, 404, 503))
def get_entry(request: HttpRequest, tape_id: str, pos: int) -> dict:
    """One entry with all of its payload (past 2 MB a line is not parsed: see .../raw)."""
    tape = lookup.find_tape(tape_id)
    return entry_out(timeline.read_rows(tape, [lookup.find_row(tape, pos)])[0], full=True)


RAW_DOC = {
    200: {
        "description": "the line's bytes, or a record of a JSON document as JSON text",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }
}


@router.get(
    "/tapes/{tape_id}/entries/{pos}/raw",
    response=responses({}, 404, 503),
    openapi_extra={"responses": RAW_DOC},
)
def get_entry_raw(request: HttpRequest, tape_id: str, pos: int) -> HttpResponse:
    """The entry exactly as it is in the file, streamed; of a JSON document, the entry as JSON text."""
    tape = lookup.find_tape(tape_id)
    entry = raw.read(tape, lookup.find_row(tape, pos))
    response = StreamingHttpResponse(entry.chunks, content_type=entry.content_type)
    response["Content-Length"] = str(entry.length)
    return response


@router.get("/tapes/{tape_id}/anchors", response=responses({200: AnchorPageOut}, 400, 404))
def list_anchors(request: HttpRequest, tape_id: str, page: Query[PageIn]) -> dict:
    tape = lookup.find_tape(tape_id)
    anchors = Anchor.objects.filter(tape=tape)
    if page.cursor:
        anchors = anchors.filter(pos__gt=decode(page.cursor, {"pos": int})["pos"])
    rows = list(anchors.order_by("pos")[: page.limit + 1])
    more, rows = len(rows) > page.limit, rows[: page.limit]
    return {"items": rows, "next_cursor": encode({"pos": rows[-1].pos}) if more else None}


@router.get("/tapes/{tape_id}/context", response=responses({200: ContextOut}, 404, 503))
def get_context(
    request: HttpRequest, tape_id: str, anchor: str | None = Query(None, max_length=300, pattern=TEXT)
) -> dict:
    """What the model would be given after an anchor (a position or a name; default the last one)."""
    tape = lookup.find_tape(tape_id)
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
