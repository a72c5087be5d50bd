"""The tapes API: the sources, the list of tapes and its figures, and one tape's statistics."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.db.models import F, Q, QuerySet
from django.http import HttpRequest, StreamingHttpResponse
from django.utils.http import content_disposition_header
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from tapeview.sources import FileUnreadable, TapeNotFound

from .. import export, expression, formats, handoff, health, listing, lookup, overview, seek
from ..discovery import this_host
from ..forms import SORTS
from ..models import Tape
from .cursor import FOREIGN, BadCursor, decode, encode, offset_page
from .schemas import TEXT, PageIn, responses

Sort = Literal[tuple(k for key in SORTS for k in (key, f"-{key}"))]  # type: ignore[misc]


class SourceOut(Schema):
    label: str
    kind: str
    found: bool
    readable: bool
    ok: bool
    tapes: int
    entries: int
    unreadable: int
    last_indexed: datetime | None
    problems: list[str]
    indexed_bytes: int = Field(description="bytes of the source's files the index has read")
    total_bytes: int = Field(
        description="bytes its files held when the indexer last looked (equal: caught up)"
    )
    search_behind: int = Field(description="indexed entries not yet searchable; 0 when caught up")
    root_is_link: bool = Field(
        description="the configured folder is, or lies below, a symbolic link (the Sources page names "
        "the folder it leads to; folders are not shown here)"
    )
    root_swapped: bool = Field(
        description="the link now leads to another folder than when Tapeview started reading it: the "
        "first folder is still read until Tapeview restarts (ok is false)"
    )


class TapeOut(Schema):
    id: str = Field(description="opaque and URL-safe: the {id} of the tape's other endpoints")
    host: str = Field(description="the host whose source holds the tape (its TAPEVIEW_HOST)")
    source: str
    kind: str
    role: str
    label: str
    name: str = Field(description="its name in its source, shown under the label (Bub: the file name)")
    workdir: str = Field(
        description="the folder the session worked in, as the agent recorded it (Bub's acp-sessions.json); "
        '"" when unknown'
    )
    entries: int
    unreadable: int
    unfinished_last_line: bool = Field(
        description="the file ends in a line without its newline: being written, or cut by a crash. It is "
        "neither an entry nor unreadable; the timeline shows it last"
    )
    anchors: int
    last_anchor: str
    first_at: datetime | None
    last_at: datetime | None
    size_bytes: int
    tokens: int | None = Field(
        description="the token usage the agent recorded: the tape's total, but nanobot (kind nanobot) keeps"
        " only its last turn's; sort=tokens orders by the number alone; null: none recorded"
    )
    errors: int = Field(
        description="failed tool calls, runs and steps: GET .../entries?errors=true lists them"
    )
    cost: float | None = Field(
        description="the session's cost in USD: the agent's own figure where it reports one (araliya's "
        "spend.json, Bub-next's step metrics), else its tokens priced per model by the price table (the "
        "Prices page); null: unknown (no usage recorded, or a model the table does not price); sort=cost"
    )
    cost_source: Literal["reported", "priced"] | None = Field(
        description="reported: the agent's own figure, at its own rates; priced: worked out by Tapeview from "
        "the tokens and the price table; null with no cost"
    )


class AttachmentOut(Schema):
    id: str
    role: str
    label: str
    note: str


class TapeDetailOut(TapeOut):
    note: str
    problem: str
    entries_since_anchor: int
    handoff: bool = Field(description="whether POST .../handoff can write to this tape")
    handoff_refusal: str = Field(description="why not, when it cannot")
    handoff_wait: str = Field(
        description="why a handoff sent now would get 409 (the agent is mid-turn, writing a line, or looks "
        'stopped), or "" when it would be written; "" also for a tape on another host (its host decides)'
    )
    line_format: str = Field(
        description='Bub\'s line format: "0.5.1", "bub-next" (its next release\'s CloudEvents lines) or "" '
        "(another agent, or no line yet)"
    )
    format_note: str = Field(
        description="what the format means for the agent: a line in the other format (which one), or a "
        '0.5.1 tape that Bub\'s new release, writing in the same folder, cannot append to; "" when none'
    )
    attachments: list[AttachmentOut]


class SourcePageOut(Schema):
    items: list[SourceOut]
    next_cursor: str | None


class TapePageOut(Schema):
    items: list[TapeOut]
    next_cursor: str | None


class TapeFilters(PageIn):
    source: str | None = Field(None, max_length=100, pattern=TEXT)
    host: str | None = Field(None, max_length=255, pattern=TEXT, description="only this host's tapes")
    q: str | None = Field(None, max_length=200, pattern=TEXT)
    kind: Literal[tuple(listing.KINDS)] | None = Field(None, description="an agent family")  # type: ignore[valid-type]
    errors: bool = Field(False, description="only tapes with at least one error")
    filter: str | None = Field(
        None,
        description='an expression of the filter language, e.g. `errors > 0 and kind == "bub"`, '
        "`since:2d` (docs/filters.md); one that does not parse is a 400 whose detail says where",
    )
    sort: Sort = "-last"  # type: ignore[valid-type]


class OverviewFilters(Schema):
    source: str | None = Field(None, max_length=100, pattern=TEXT)
    host: str | None = Field(None, max_length=255, pattern=TEXT, description="only this host's tapes")
    q: str | None = Field(None, max_length=200, pattern=TEXT)
    kind: Literal[tuple(listing.KINDS)] | None = Field(None, description="an agent family")  # type: ignore[valid-type]
    errors: bool = Field(False, description="only tapes with at least one error")
    filter: str | None = Field(None, description="an expression of the filter language, as GET /tapes takes")
    since: datetime | None = Field(None, description="only sessions last active at or after this time")
    until: datetime | None = Field(None, description="only sessions last active before this time")


class SpreadOut(Schema):
    known: int = Field(description="how many had a known start and end: the others are not counted")
    p50_seconds: float | None = Field(description="the median (nearest rank); null when none is known")
    p99_seconds: float | None


class OverviewOut(Schema):
    sessions: int
    undated: int = Field(description="sessions without a time")
    entries: int
    errors: int
    error_rate: float | None = Field(description="errors per entry; null without entries")
    sessions_with_errors: int
    tokens: int | None
    cost: float | None = Field(description="USD, over the sessions with a cost; null: none")
    costed: int = Field(description="sessions with a cost")
    session_length: SpreadOut = Field(description="each session's first to last entry")
    phase_length: SpreadOut = Field(description="each phase from its anchor to its last entry")
    turn_length: SpreadOut = Field(
        description="each turn from its first time to its last (a Bub run, a nanobot, yachiyo or araliya "
        "turn); turns without times are not counted"
    )


class ExportIn(Schema):
    format: Literal["jsonl", "md"] = Field(
        "jsonl",
        description="jsonl: the tape's lines as written (of a JSON document, one line per entry); "
        "md: a Markdown transcript",
    )
    # As the context's ?anchor=: a position (as the timeline links give it) or a name.
    start: str | None = Field(
        None,
        alias="from",
        max_length=export.NAME_LENGTH,
        pattern=TEXT,
        description="the anchor it starts at: its position, or its name (the last anchor so named)",
    )
    stop: str | None = Field(
        None,
        alias="to",
        max_length=export.NAME_LENGTH,
        pattern=TEXT,
        description="the anchor it ends before: its position, or its name (the last anchor so named)",
    )


EXPORT_DOC = {
    200: {
        "description": "a download (Content-Disposition: attachment), streamed",
        "content": {media.split(";")[0]: {"schema": {"type": "string"}} for media in export.FORMATS.values()},
    }
}

router = Router(tags=["tapes"])


def _tape_out(tape: Tape) -> dict:
    fields = (
        "host",
        "source",
        "kind",
        "role",
        "label",
        "name",
        "entries",
        "unreadable",
        "anchors",
        "last_anchor",
    )
    more = ("first_at", "last_at", "tokens", "errors", "cost", "workdir", "unfinished_last_line")
    values = {f: getattr(tape, f) for f in (*fields, *more)}
    cost_source = (tape.cost_source or None) if tape.cost is not None else None
    return {"id": tape.key, "size_bytes": tape.size, "cost_source": cost_source, **values}


@router.get("/sources", response=responses({200: SourcePageOut}, 400))
def list_sources(request: HttpRequest, page: Query[PageIn]) -> dict:
    """Every configured source, its kind, health and how far it is indexed (folders are not shown)."""
    items = [
        {
            "label": h.spec.label,
            "kind": h.spec.kind,
            "found": h.found,
            "readable": h.readable,
            "ok": h.ok,
            "tapes": h.tapes,
            "entries": h.entries,
            "unreadable": h.unreadable,
            "last_indexed": h.last_indexed,
            "problems": [p.replace(str(h.spec.path), "the source's folder") for p in h.problems],
            "indexed_bytes": h.indexed_bytes,
            "total_bytes": h.total_bytes,
            "search_behind": h.search_behind,
            "root_is_link": h.root is not None,
            "root_swapped": bool(h.root and h.root.swapped),
        }
        for h in health.source_health()
    ]
    items, next_cursor = offset_page(items, page.cursor, page.limit)
    return {"items": items, "next_cursor": next_cursor}


def _listed(filters: TapeFilters | OverviewFilters, **narrowing: object) -> QuerySet:
    try:
        return listing.tapes(
            filters.q,
            filters.source,
            kind=filters.kind,
            errors=filters.errors,
            host=filters.host,
            expr=filters.filter,
            **narrowing,
        )
    except expression.FilterError as exc:
        raise HttpError(400, f"filter {exc}") from None


@router.get("/tapes", response=responses({200: TapePageOut}, 400))
def list_tapes(request: HttpRequest, filters: Query[TapeFilters]) -> dict:
    """Every tape (attachments are listed with their tape), filtered and sorted; `-` sorts descending."""
    tapes = _listed(filters)
    rows, next_cursor = _keyset(tapes, filters.sort, filters.cursor, filters.limit)
    return {"items": [_tape_out(t) for t in rows], "next_cursor": next_cursor}


@router.get("/overview", response=responses({200: OverviewOut}, 400))
def get_overview(request: HttpRequest, filters: Query[OverviewFilters]) -> dict:
    """The session index's stats panel: the figures of the tapes GET /tapes lists with these filters."""
    ov = overview.overview(_listed(filters, since=filters.since, until=filters.until))
    return {
        "sessions": ov.sessions,
        "undated": ov.undated,
        "entries": ov.entries,
        "errors": ov.errors,
        "error_rate": ov.error_rate,
        "sessions_with_errors": ov.with_errors,
        "tokens": ov.tokens,
        "cost": ov.cost,
        "costed": ov.costed,
        **{
            name: {"known": s.known, "p50_seconds": s.p50, "p99_seconds": s.p99}
            for name, s in (
                ("session_length", ov.session_length),
                ("phase_length", ov.phase_length),
                ("turn_length", ov.turn_length),
            )
        },
    }


def _keyset(tapes: QuerySet, sort: str, cursor: str | None, limit: int) -> tuple[list[Tape], str | None]:
    """A page of tapes after the cursor's (sort value, id), nulls last either way."""
    field, desc = SORTS[sort.lstrip("-")], sort.startswith("-")
    if cursor:
        key = decode(cursor, {"s": str, "id": int})
        if key["s"] != sort:
            raise BadCursor("this cursor belongs to another sort")
        value = _sort_value(field, key.get("v"))
        if value is None:
            tapes = tapes.filter(**{f"{field}__isnull": True, "id__gt": key["id"]})
        else:
            beyond = {f"{field}__{'lt' if desc else 'gt'}": value}
            tapes = tapes.filter(
                Q(**beyond) | Q(**{field: value, "id__gt": key["id"]}) | Q(**{f"{field}__isnull": True})
            )
    order = F(field).desc(nulls_last=True) if desc else F(field).asc(nulls_last=True)
    rows = list(tapes.order_by(order, "id")[: limit + 1])
    if len(rows) <= limit:
        return rows, None
    last = rows[limit - 1]
    value = getattr(last, field)
    value = value.isoformat() if isinstance(value, datetime) else value
    return rows[:limit], encode({"s": sort, "v": value, "id": last.pk})


def _sort_value(field: str, value: object) -> object:
    try:
        return seek.sort_value(field, value)
    except seek.BadCursor:
        raise BadCursor(FOREIGN) from None


@router.get("/tapes/{tape_id}", response=responses({200: TapeDetailOut}, 404))
def get_tape(request: HttpRequest, tape_id: str) -> dict:
    tape = lookup.find_tape(tape_id)
    refusal = handoff.refusal(tape)
    attachments = [
        {"id": a.key, "role": a.role, "label": a.label, "note": a.note}
        for a in tape.attachments.order_by("role", "name")
    ]
    return {
        **_tape_out(tape),
        "note": tape.note,
        "problem": tape.problem,
        "entries_since_anchor": tape.entries_since_anchor,
        "handoff": not refusal,
        "handoff_refusal": refusal,
        "handoff_wait": "" if refusal else _handoff_wait(tape),
        "line_format": tape.line_format,
        "format_note": formats.note(tape),
        "attachments": attachments,
    }


def _handoff_wait(tape: Tape) -> str:
    if tape.host != this_host():
        return ""
    try:
        state = handoff.append_state(tape)
    except TapeNotFound:
        return ""
    except FileUnreadable as exc:
        return exc.detail
    return "" if state.status == "idle" else f"{state.status}: {state.reason}"


@router.get(
    "/tapes/{tape_id}/export",
    response=responses({}, 400, 404, 503),
    openapi_extra={"responses": EXPORT_DOC},
)
def get_export(request: HttpRequest, tape_id: str, query: Query[ExportIn]) -> StreamingHttpResponse:
    """The tape, or the segment from the anchor at `from` up to the one at `to`, as a download."""
    tape = lookup.find_tape(tape_id)
    try:
        found = export.export(tape, query.format, query.start, query.stop)
    except export.BadSegment as exc:
        raise HttpError(400, str(exc)) from None
    response = StreamingHttpResponse(found.chunks, content_type=found.content_type)
    response["Content-Disposition"] = content_disposition_header(True, found.filename)
    return response
