"""Recording reviews, finding them, and telling which ones no longer match their entry (page and API)."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.http import Http404

from tapeview.sources import TapeNotFound
from tapeview.tapes import discovery, lookup, raw, rows
from tapeview.tapes.models import Anchor, Tape
from tapeview.tapes.rows import Row

from .models import SPANS, VERDICTS, Review, ReviewQuerySet

MAX_LABELS = 10
MAX_LABEL = 40
MAX_COMMENT = 10_000
# Letters and digits of any script, and . _ : / + -: no spaces or commas, which separate labels.
LABEL = re.compile(r"^[\w.:/+-]+$")


class ReviewRefused(ValueError):
    """The review is not one that can be recorded (a score out of range, a bad label, ...): a 400."""


class ReviewConflict(Exception):
    """`supersedes` names a review that is superseded already, or of another target: a 409."""


class NoSuchReview(Http404, LookupError):
    """No review has this id."""


def clean_labels(labels: Iterable[str]) -> list[str]:
    """The labels, lowercased, each once, in the order given; ReviewRefused for a bad one."""
    out: list[str] = []
    for label in labels:
        label = label.strip().lower()
        if not label:
            continue
        if len(label) > MAX_LABEL or not LABEL.match(label):
            raise ReviewRefused(
                f"a label is at most {MAX_LABEL} letters, digits or . _ : / + - (no spaces): {label[:50]!r}"
            )
        if label not in out:
            out.append(label)
    if len(out) > MAX_LABELS:
        raise ReviewRefused(f"at most {MAX_LABELS} labels")
    return out


def label_text(labels: Sequence[str]) -> str:
    return f" {' '.join(labels)} " if labels else ""


def split_labels(text: str) -> list[str]:
    """Labels as typed in a form: separated by commas or spaces."""
    return [part for part in re.split(r"[\s,]+", text) if part]


def content_hash(tape: Tape, row: Row) -> str:
    """sha256 of the entry as the agent wrote it (raw.read: the line's bytes, or a record's JSON)."""
    digest = hashlib.sha256()
    for chunk in raw.read(tape, row).chunks:
        digest.update(chunk)
    return digest.hexdigest()


def add(
    tape: Tape,
    pos: int,
    author: str,
    *,
    score: int | None = None,
    verdict: str = "",
    labels: Iterable[str] = (),
    comment: str = "",
    span: str = "entry",
    end: int | None = None,
    supersedes: str | None = None,
) -> Review:
    """Record a review of the entry at `pos` (or the turn or phase starting there).

    NoSuchEntry (a 404) when the tape has no entry there, TapeNotFound when its file is gone,
    ReviewRefused for a review that cannot be, ReviewConflict for a `supersedes` that cannot be.
    """
    row = lookup.find_row(tape, pos)
    if score is not None and not 1 <= score <= 5:
        raise ReviewRefused("a score is 1 to 5")
    verdict = verdict or ""
    if verdict not in ("", *VERDICTS):
        raise ReviewRefused("a verdict is pass or fail")
    labels = clean_labels(labels)
    if len(comment) > MAX_COMMENT or "\x00" in comment:
        raise ReviewRefused(f"a comment is at most {MAX_COMMENT} characters, without NUL")
    if score is None and not verdict and not labels and not comment.strip():
        raise ReviewRefused("a review needs a score, a verdict, a label or a comment")
    review = Review(
        tape_key=tape.key,
        source=tape.source,
        rel=tape.rel,
        pos=pos,
        span=span,
        end=span_end(tape, pos, span, end),
        content_hash=content_hash(tape, row),
        score=score,
        verdict=verdict,
        label_text=label_text(labels),
        comment=comment,
        author=author,
    )
    with transaction.atomic():
        if supersedes:
            review.supersedes = supersedable(find_one(supersedes), review)
        return insert(review)


def span_end(tape: Tape, pos: int, span: str, end: int | None) -> int | None:
    """The last pos a review of this span covers: its own for an entry, up to the next phase for a phase."""
    if span not in SPANS:
        raise ReviewRefused(f"a span is one of {', '.join(SPANS)}")
    if span == "entry":
        if end not in (None, pos):
            raise ReviewRefused("a review of one entry ends where it starts")
        return pos
    if span == "turn":
        if end is None or not pos <= end <= lookup.MAX_POS:
            raise ReviewRefused("a review of a turn names its last entry: pos <= end")
        try:
            lookup.find_row(tape, end)
        except lookup.NoSuchEntry:
            raise ReviewRefused(f"a review of a turn ends at an entry of this tape: no #{end}") from None
        return end
    if not Anchor.objects.filter(tape=tape, pos=pos, phase=True).exists():
        raise ReviewRefused(f"a review of a phase starts at its phase anchor: #{pos} is none")
    following = Anchor.objects.filter(tape=tape, phase=True, pos__gt=pos).order_by("pos").first()
    return following.pos - 1 if following else None  # null: the tape's last phase, still open


def supersedable(previous: Review, review: Review) -> Review:
    if not previous.same_target(review):
        raise ReviewConflict(
            f"review {previous.uid} is of another target ({previous.span} at #{previous.pos} of tape "
            f"{previous.tape_key}): a correction reviews the same one"
        )
    if not previous.current:
        raise ReviewConflict(f"review {previous.uid} is superseded already: supersede the current one")
    return previous


def insert(review: Review) -> Review:
    try:
        with transaction.atomic():
            review.save()
    except IntegrityError:
        # The unique `supersedes`: another correction of the same review won the race.
        if review.supersedes_id is not None:
            raise ReviewConflict(f"review {review.supersedes.uid} is superseded already") from None
        raise
    return review


def find_one(review_id: str) -> Review:
    try:
        uid = uuid.UUID(review_id)
    except (ValueError, AttributeError):
        raise NoSuchReview(f"no review {review_id[:50]!r}") from None
    review = Review.objects.filter(uid=uid).first()
    if review is None:
        raise NoSuchReview(f"no review {review_id}")
    return review


def find(
    *,
    label: str | None = None,
    tape: str | None = None,
    score: int | None = None,
    verdict: str | None = None,
    current: bool | None = None,
    pos: int | None = None,
) -> ReviewQuerySet:
    """Reviews matching every filter given, the most recently recorded first."""
    found = Review.objects.all()
    if label:
        label = label.strip().lower()
        # One label, never a run of them: " a b " would match a review labelled a and b.
        found = found.labelled(label) if LABEL.match(label) else found.none()
    if tape:
        found = found.filter(tape_key=tape)
    if pos is not None:
        found = found.filter(pos=pos)
    if score is not None:
        found = found.filter(score=score)
    if verdict:
        found = found.filter(verdict=verdict)
    if current is True:
        found = found.current()
    elif current is False:
        found = found.superseded()
    return found.order_by("-pk")


def mark(reviews: Iterable[Review]) -> list[Review]:
    """The reviews, each with `orphaned` set: its entry now has other bytes, or is gone.

    Reads the bytes of each reviewed entry once (at its indexed place), whatever the number of
    reviews of it.
    """
    reviews = list(reviews)
    if not reviews:
        return []  # most entries of a timeline page: no query for them
    wanted: dict[str, set[int]] = {}
    for r in reviews:
        wanted.setdefault(r.tape_key, set()).add(r.pos)
    hashes: dict[tuple[str, int], str] = {}
    for tape in Tape.objects.filter(key__in=wanted):
        for row in rows.of(tape).at(wanted[tape.key]):
            # A file gone or unreadable: the review has nothing to match.
            with suppress(TapeNotFound, OSError):
                hashes[tape.key, row.pos] = content_hash(tape, row)
    for r in reviews:
        r.orphaned = hashes.get((r.tape_key, r.pos)) != r.content_hash
    return reviews


@dataclass(frozen=True)
class Reviewed:
    """A tape with reviews that match a filter: the session index, filtered by review."""

    key: str
    tape: Tape | None  # None: not in the index (yet, or any more)
    reviews: int


def reviewed_tapes(found: ReviewQuerySet, limit: int = 100) -> list[Reviewed]:
    """The tapes of these reviews, the most reviewed first."""
    counts = found.order_by().values("tape_key").annotate(n=Count("pk")).order_by("-n", "tape_key")[:limit]
    tapes = Tape.objects.in_bulk([c["tape_key"] for c in counts], field_name="key")
    return [Reviewed(c["tape_key"], tapes.get(c["tape_key"]), c["n"]) for c in counts]


def current_by_pos(tape: Tape) -> dict[int, list[Review]]:
    """The current reviews of a tape by position, one query (orphans are not marked yet)."""
    board: dict[int, list[Review]] = {}
    for r in Review.objects.linked().current().filter(tape_key=tape.key).order_by("pk"):
        board.setdefault(r.pos, []).append(r)
    return board


def summary(tape_key: str, top: int = 12) -> dict:
    """How many reviews a tape has, current and superseded, and its current labels, most used first."""
    # One query (each is a round trip on PostgreSQL): every review's labels and whether it is current.
    found = Review.objects.filter(tape_key=tape_key).values_list("label_text", "superseded_by")
    current, superseded, labels = 0, 0, Counter()
    for text, successor in found:
        if successor is None:
            current += 1
            labels.update(text.split())
        else:
            superseded += 1
    return {"current": current, "superseded": superseded, "labels": labels.most_common(top)}


def refresh_index() -> None:
    """A list page's cheap refresh of the tape index, so that orphans show as the files are now."""
    discovery.sync_if_stale()


def labelled_tapes(op: str, value: str) -> Q:
    """The filter language's `label` (tapes.expression): the tapes with a current review labelled
    `value` (`==`, `:`), with a label containing it (`~`), or with none so labelled (`!=`)."""
    label = value.strip().lower()
    reviews = Review.objects.current()
    if op == "~":
        # Within one label: " a b " holds "a b" across two labels.
        found = reviews.filter(label_text__contains=label) if " " not in label else reviews.none()
    else:
        found = reviews.labelled(label) if LABEL.match(label) else reviews.none()
    keys = Q(key__in=found.order_by().values("tape_key"))
    return ~keys if op == "!=" else keys


def reviewed_tape_keys(*, label: str | None = None, score: int | None = None) -> list[str]:
    """The keys of the tapes that have a current review with this label (and) score."""
    found = find(label=label, score=score, current=True).order_by()
    return list(found.values_list("tape_key", flat=True).distinct())
