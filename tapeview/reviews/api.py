"""The reviews API: record a review of an entry, list reviews, export a tape's reviews and import them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Literal

from django.http import HttpRequest, StreamingHttpResponse
from ninja import Field, Query, Router, Schema, Status
from ninja.errors import HttpError

from tapeview.accounts.auth import writer
from tapeview.tapes import lookup
from tapeview.tapes.api.cursor import decode, encode
from tapeview.tapes.api.schemas import TEXT, BodyIn, ErrorOut, PageIn, WholeInt, responses

from . import ledger, transfer
from .models import Review


class ReviewIn(BodyIn):
    pos: WholeInt = Field(description="the entry's position (its line number); a turn or phase starts there")
    score: WholeInt | None = Field(None, description="1 to 5 (400 otherwise)")
    verdict: Literal["pass", "fail"] | None = None
    labels: list[str] = Field(
        [], max_length=100, description="short words: letters, digits, . _ : / + - (lowercased)"
    )
    comment: str = Field("", max_length=ledger.MAX_COMMENT, pattern=TEXT)
    supersedes: str | None = Field(
        None, max_length=100, description="the id of the current review of the same target this corrects"
    )
    span: Literal["entry", "turn", "phase"] = "entry"
    end: WholeInt | None = Field(None, description="of a turn: its last entry's pos")


class ReviewOut(Schema):
    id: str = Field(description="stable across export and import")
    tape: str = Field(description="the tape's id")
    source: str
    pos: int
    span: str
    end: int | None = Field(description="the last pos reviewed; null: a phase still open")
    content_hash: str = Field(description="sha256 of the entry's bytes when it was reviewed")
    score: int | None
    verdict: str
    labels: list[str]
    comment: str
    author: str
    created_at: datetime
    supersedes: str | None
    superseded_by: str | None
    current: bool = Field(description="nothing supersedes it")
    orphaned: bool = Field(description="the entry at this pos now has other bytes, or is gone")


class ReviewPageOut(Schema):
    items: list[ReviewOut]
    next_cursor: str | None


class ReviewFilters(PageIn):
    label: str | None = Field(None, max_length=ledger.MAX_LABEL, pattern=TEXT)
    tape: str | None = Field(None, max_length=lookup.KEY_LENGTH, pattern=TEXT, description="a tape's id")
    score: int | None = Field(None, ge=1, le=5)
    verdict: Literal["pass", "fail"] | None = None
    current: bool | None = Field(None, description="true: only current reviews; false: only superseded")


class ImportedOut(Schema):
    created: int
    skipped: int = Field(description="reviews already here (by id): an import twice adds nothing")


router = Router(tags=["reviews"])


@contextmanager
def refusals() -> Iterator[None]:
    """The reviews' own refusals as HTTP answers (the rest are mapped by tapeview/api.py)."""
    try:
        yield
    except (ledger.ReviewRefused, transfer.ImportRefused) as exc:
        raise HttpError(400, str(exc)) from None
    except ledger.ReviewConflict as exc:
        raise HttpError(409, str(exc)) from None


def review_out(r: Review) -> dict:
    return {
        "id": str(r.uid),
        "tape": r.tape_key,
        "source": r.source,
        "pos": r.pos,
        "span": r.span,
        "end": r.end,
        "content_hash": r.content_hash,
        "score": r.score,
        "verdict": r.verdict,
        "labels": r.labels,
        "comment": r.comment,
        "author": r.author,
        "created_at": r.created_at,
        "supersedes": str(r.supersedes_uid) if r.supersedes_uid else None,
        "superseded_by": str(r.superseded_by_uid) if r.superseded_by_uid else None,
        "current": r.current,
        "orphaned": bool(r.orphaned),
    }


@router.post(
    "/tapes/{tape_id}/reviews", response={**responses({201: ReviewOut}, 400, 403, 404), 409: ErrorOut}
)
def create_review(request: HttpRequest, tape_id: str, body: ReviewIn) -> Status:
    """Record a review of an entry; a correction names the review it `supersedes` (never edited)."""
    actor = writer(request)
    tape = lookup.find_tape(tape_id)
    with refusals():
        review = ledger.add(
            tape,
            body.pos,
            actor.name,
            score=body.score,
            verdict=body.verdict or "",
            labels=body.labels,
            comment=body.comment,
            span=body.span,
            end=body.end,
            supersedes=body.supersedes,
        )
    shown = ledger.mark([Review.objects.linked().get(pk=review.pk)])[0]
    return Status(201, review_out(shown))


@router.get("/reviews", response=responses({200: ReviewPageOut}, 400))
def list_reviews(request: HttpRequest, filters: Query[ReviewFilters]) -> dict:
    """Reviews, the most recently recorded first, with whether each is current and orphaned."""
    found = ledger.find(
        label=filters.label,
        tape=filters.tape,
        score=filters.score,
        verdict=filters.verdict,
        current=filters.current,
    ).linked()
    if filters.cursor:
        found = found.filter(pk__lt=decode(filters.cursor, {"id": int})["id"])
    rows = list(found[: filters.limit + 1])
    more, rows = len(rows) > filters.limit, rows[: filters.limit]
    return {
        "items": [review_out(r) for r in ledger.mark(rows)],
        "next_cursor": encode({"id": rows[-1].pk}) if more else None,
    }


EXPORT_DOC = {
    200: {
        "description": "one review a line, oldest first: a review follows the one it corrects",
        "content": {transfer.CONTENT_TYPE: {"schema": {"type": "string"}}},
    }
}


@router.get(
    "/tapes/{tape_id}/reviews/export",
    response=responses({}, 404),
    openapi_extra={"responses": EXPORT_DOC},
)
def export_reviews(request: HttpRequest, tape_id: str) -> StreamingHttpResponse:
    """Every review of the tape, history included, as JSON lines (also of a tape whose file is gone)."""
    # A tape without reviews exports nothing, a tape gone from the index its reviews; no tape is a 404.
    reviewed = lookup.is_key(tape_id) and ledger.find(tape=tape_id).exists()
    if not reviewed:
        lookup.find_tape(tape_id)
    response = StreamingHttpResponse(transfer.export(tape_id), content_type=transfer.CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="reviews-{tape_id}.jsonl"'
    return response


IMPORT_DOC = {
    "required": True,
    "description": "an export of GET /api/tapes/{id}/reviews/export (of one tape or several, joined)",
    # The body is read as bytes whatever its type: an export saved as text/plain imports the same.
    "content": {media: {"schema": {"type": "string"}} for media in (transfer.CONTENT_TYPE, "text/plain")},
}


@router.post(
    "/reviews/import",
    response={**responses({201: ImportedOut}, 400, 403), 409: ErrorOut},
    openapi_extra={"requestBody": IMPORT_DOC},
)
def import_reviews(request: HttpRequest) -> Status:
    """Record the reviews of an export that are not here yet; importing a file twice adds nothing."""
    actor = writer(request)
    with refusals():
        imported = transfer.import_lines(request.body, actor)
    return Status(201, {"created": imported.created, "skipped": imported.skipped})
