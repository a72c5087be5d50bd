"""Reviews exported with their tape as JSON lines, and imported again (into a fresh index too)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import orjson
from django.db import transaction
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError

from tapeview.accounts.audit import Actor, record
from tapeview.tapes import discovery, lookup

from . import ledger
from .models import SPANS, VERDICTS, Review

CONTENT_TYPE = "application/x-ndjson"
MAX_LINES = 100_000


class ImportRefused(ValueError):
    """A line of the file is not a review this app exported (a 400); nothing was imported."""


class ReviewLine(BaseModel):
    """One review as exported: everything needed to record it again, in another database."""

    model_config = ConfigDict(extra="ignore")

    id: uuid.UUID
    source: str = Field(min_length=1, max_length=100, pattern=r"^[^\x00]*$")
    rel: str = Field(min_length=1, max_length=1000, pattern=r"^[^\x00]*$")
    pos: int = Field(ge=1, le=lookup.MAX_POS)
    span: str = Field(pattern=f"^({'|'.join(SPANS)})$")
    end: int | None = Field(None, ge=1, le=lookup.MAX_POS)
    content_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    score: int | None = Field(None, ge=1, le=5)
    verdict: str | None = Field("", pattern=f"^({'|'.join(VERDICTS)})?$")
    labels: list[str] = Field(default_factory=list, max_length=ledger.MAX_LABELS)
    comment: str = Field("", max_length=ledger.MAX_COMMENT, pattern=r"^[^\x00]*$")
    author: str = Field(min_length=1, max_length=200, pattern=r"^[^\x00]*$")
    created_at: AwareDatetime
    supersedes: uuid.UUID | None = None


@dataclass(frozen=True)
class Imported:
    created: int
    skipped: int  # already there (by id): importing a file twice adds nothing


def line_of(review: Review, supersedes: uuid.UUID | None) -> dict:
    return {
        "id": str(review.uid),
        "tape": review.tape_key,
        "source": review.source,
        "rel": review.rel,
        "pos": review.pos,
        "span": review.span,
        "end": review.end,
        "content_hash": review.content_hash,
        "score": review.score,
        "verdict": review.verdict,
        "labels": review.labels,
        "comment": review.comment,
        "author": review.author,
        "created_at": review.created_at.isoformat(),
        "supersedes": str(supersedes) if supersedes else None,
    }


def export(tape_key: str) -> Iterator[bytes]:
    """Every review of the tape, history included, oldest first: a review follows the one it corrects."""
    reviews = Review.objects.linked().filter(tape_key=tape_key).order_by("created_at", "pk")
    for review in reviews.iterator():
        yield orjson.dumps(line_of(review, review.supersedes_uid)) + b"\n"


def parse(data: bytes) -> list[ReviewLine]:
    lines = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        if len(lines) >= MAX_LINES:
            raise ImportRefused(f"at most {MAX_LINES} reviews at once")
        try:
            review = ReviewLine.model_validate(orjson.loads(line))
            review.labels = ledger.clean_labels(review.labels)
        except orjson.JSONDecodeError:
            raise ImportRefused(f"line {number}: not JSON") from None
        except ValidationError as exc:
            where = ".".join(str(p) for p in exc.errors()[0]["loc"])
            raise ImportRefused(f"line {number}: {where}: {exc.errors()[0]['msg']}") from None
        except ledger.ReviewRefused as exc:
            raise ImportRefused(f"line {number}: {exc}") from None
        lines.append(review)
    return lines


def import_lines(data: bytes, actor: Actor) -> Imported:
    """Record the reviews of an export that are not here yet, with their authors and times.

    All or nothing: ImportRefused (a bad line, or a correction of a review neither here nor in the
    file) or ReviewConflict (a review corrected twice) leaves the database as it was.
    """
    lines = parse(data)
    if not lines:
        raise ImportRefused("no reviews to import: the body is empty (send the JSON lines of an export)")
    present = set(Review.objects.filter(uid__in=[line.id for line in lines]).values_list("uid", flat=True))
    created = skipped = 0
    with transaction.atomic():
        for line in _corrected_last(lines, present):
            if line.id in present:
                skipped += 1
                continue
            review = Review(
                uid=line.id,
                tape_key=discovery.key_at(line.source, line.rel),
                source=line.source,
                rel=line.rel,
                pos=line.pos,
                span=line.span,
                end=line.end,
                content_hash=line.content_hash,
                score=line.score,
                verdict=line.verdict or "",
                label_text=ledger.label_text(line.labels),
                comment=line.comment,
                author=line.author,
                created_at=line.created_at,
            )
            if line.supersedes:
                review.supersedes = ledger.supersedable(ledger.find_one(str(line.supersedes)), review)
            ledger.insert(review)
            present.add(line.id)
            created += 1
        if created:
            record(
                actor,
                "reviews.import",
                subject="reviews",
                target=f"{created} reviews imported",
                detail={"created": created, "skipped": skipped},
            )
    return Imported(created, skipped)


def _corrected_last(lines: list[ReviewLine], present: set[uuid.UUID]) -> list[ReviewLine]:
    """The lines in an order where a review comes after the one it corrects (an export's order)."""
    corrected = {line.supersedes for line in lines if line.supersedes}
    known = present | set(Review.objects.filter(uid__in=corrected).values_list("uid", flat=True))
    ordered: list[ReviewLine] = []
    waiting = sorted(lines, key=lambda line: line.created_at)
    while waiting:
        ready, later = [], []
        for line in waiting:
            is_ready = line.id in present or line.supersedes is None or line.supersedes in known
            (ready if is_ready else later).append(line)
        if not ready:
            first = waiting[0]
            raise ImportRefused(
                f"review {first.id} corrects review {first.supersedes}, which is neither here nor in the file"
            )
        ordered += ready
        known |= {line.id for line in ready}
        waiting = later
    return ordered
