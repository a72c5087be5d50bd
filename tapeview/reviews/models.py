"""Reviews: facts about entries that are never changed or removed, only superseded.

Unlike the tape index, reviews are not derived from the agent's files: they name their tape by
its source and place (`tape_key` is derived from both, and survives a re-index), never by a
foreign key to a row the index may drop and rebuild.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

SPANS = ("entry", "turn", "phase")
VERDICTS = ("pass", "fail")


class AppendOnly(Exception):
    """A review is never edited or deleted: a correction is a new review that supersedes it."""


NEVER_CHANGED = "a review is never changed: record a new review that supersedes it"
NEVER_DELETED = "a review is never deleted: record a new review that supersedes it"


class ReviewQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnly(NEVER_CHANGED)

    def bulk_update(self, *args: Any, **kwargs: Any) -> int:
        raise AppendOnly(NEVER_CHANGED)

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AppendOnly(NEVER_DELETED)

    def linked(self) -> ReviewQuerySet:
        """With the ids of the review each one corrects and of the one that corrects it."""
        return self.annotate(supersedes_uid=F("supersedes__uid"), superseded_by_uid=F("superseded_by__uid"))

    def current(self) -> ReviewQuerySet:
        return self.filter(superseded_by__isnull=True)

    def superseded(self) -> ReviewQuerySet:
        return self.filter(superseded_by__isnull=False)

    def labelled(self, label: str) -> ReviewQuerySet:
        return self.filter(label_text__contains=f" {label} ")


class Review(models.Model):
    """One operator's judgement of an entry (or the turn or phase starting at it), as it was made."""

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)  # the id outside
    tape_key = models.CharField(max_length=32)  # the tape's key (discovery.key_at(source, rel))
    source = models.CharField(max_length=100)
    rel = models.CharField(max_length=1000)
    pos = models.IntegerField()
    span = models.CharField(max_length=5, choices=[(s, s) for s in SPANS], default="entry")
    end = models.IntegerField(null=True, blank=True)  # the span's last pos; null: open
    # sha256 of the entry's bytes at `pos` when reviewed: another hash there now means orphaned.
    content_hash = models.CharField(max_length=64)
    score = models.PositiveSmallIntegerField(null=True, blank=True)
    verdict = models.CharField(max_length=4, blank=True, choices=[(v, v) for v in VERDICTS])
    # Lowercase labels between single spaces (" slow wrong-tool "): one column that every database
    # filters with LIKE, where a JSON list would need JSON containment SQLite lacks.
    label_text = models.CharField(max_length=500, blank=True)
    comment = models.TextField(blank=True)
    author = models.CharField(max_length=200)  # a user name, or "token:<name>"
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    # Unique: a review is superseded at most once, also when two corrections race.
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="superseded_by"
    )

    objects = ReviewQuerySet.as_manager()

    # Not columns: set by ledger.mark() for what a page or the API shows.
    orphaned: bool | None = None

    class Meta:
        indexes = [models.Index(fields=["tape_key", "pos"], name="review_tape_pos")]
        constraints = [
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=1, score__lte=5), name="review_score_1_to_5"
            ),
            models.CheckConstraint(condition=Q(span__in=SPANS), name="review_span"),
        ]

    def __str__(self) -> str:
        return f"review {self.uid} of {self.tape_key} #{self.pos}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding or kwargs.get("force_update") or kwargs.get("update_fields"):
            raise AppendOnly(NEVER_CHANGED)
        # Always an INSERT: a review saved with the pk of another can only fail, never overwrite it.
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AppendOnly(NEVER_DELETED)

    @property
    def labels(self) -> list[str]:
        return self.label_text.split()

    @property
    def current(self) -> bool:
        """Nothing supersedes it (of a review from `linked()`; otherwise one query)."""
        if hasattr(self, "superseded_by_uid"):
            return self.superseded_by_uid is None
        return not Review.objects.filter(supersedes=self).exists()

    def same_target(self, other: Review) -> bool:
        return (self.tape_key, self.pos, self.span) == (other.tape_key, other.pos, other.span)


QUEUE_SPANS = ("entry", "turn", "session")


class Queue(models.Model):
    """A list of entries, turns and sessions sent to be reviewed, each item assigned to a reviewer."""

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    created_by = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"queue {self.name}"


class QueueItem(models.Model):
    """One target of a queue, named as reviews name theirs (by tape key, never an index row).

    Done once a review of its target is recorded after it was added (of a session: any review of
    one of its entries); that is counted from the reviews, never stored here.
    """

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="items")
    tape_key = models.CharField(max_length=32)
    source = models.CharField(max_length=100)
    rel = models.CharField(max_length=1000)
    label = models.CharField(max_length=500)  # the tape's label when added: shown once it is gone
    span = models.CharField(max_length=7, choices=[(s, s) for s in QUEUE_SPANS], default="entry")
    pos = models.IntegerField(null=True, blank=True)  # null: a whole session
    end = models.IntegerField(null=True, blank=True)  # of a turn: its last entry
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    added_by = models.CharField(max_length=200)
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["pk"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "tape_key", "span", "pos"], name="queue_item_once"),
            # A session's item has no pos, and NULLs never collide in a unique constraint.
            models.UniqueConstraint(
                fields=["queue", "tape_key"], condition=Q(pos__isnull=True), name="queue_session_once"
            ),
            models.CheckConstraint(condition=Q(span__in=QUEUE_SPANS), name="queue_item_span"),
        ]

    def __str__(self) -> str:
        where = f" #{self.pos}" if self.pos is not None else ""
        return f"{self.span} of {self.tape_key}{where} in queue {self.queue_id}"
