"""The review queues API: queues with their progress, a queue's items, adding items, making a queue."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.contrib.auth import get_user_model
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from ninja.errors import HttpError

from tapeview.accounts.auth import admin, writer
from tapeview.tapes import lookup
from tapeview.tapes.api.cursor import decode, encode
from tapeview.tapes.api.schemas import TEXT, BodyIn, PageIn, WholeInt, responses

from . import ledger, queues
from .models import Queue, QueueItem


class TallyOut(Schema):
    reviewer: str | None = Field(description="a user name; null: the items no one is assigned")
    total: int
    done: int


class QueueOut(Schema):
    id: int
    name: str
    description: str
    created_by: str
    created_at: datetime
    total: int
    done: int = Field(description="items with a review of their target recorded since they were added")
    reviewers: list[TallyOut]


class QueueListOut(Schema):
    items: list[QueueOut]


class QueueIn(BodyIn):
    name: str = Field(max_length=queues.MAX_NAME, pattern=TEXT)
    description: str = Field("", max_length=2000, pattern=TEXT)


class ItemOut(Schema):
    id: int
    tape: str = Field(description="the tape's id")
    source: str
    label: str = Field(description="the tape's label when it was added")
    span: str = Field(description="entry, turn or session")
    pos: int | None = Field(description="the entry (a turn's first); null: a session")
    end: int | None = Field(description="of a turn: its last entry")
    reviewer: str | None
    added_by: str
    added_at: datetime
    done: bool
    gone: bool = Field(description="the tape is not in the index, or has no entry there now")


class ItemPageOut(Schema):
    items: list[ItemOut]
    next_cursor: str | None


class ItemFilters(PageIn):
    reviewer: str | None = Field(None, max_length=150, pattern=TEXT, description="'' for unassigned items")
    done: bool | None = None


class TargetIn(BodyIn):
    tape: str = Field(max_length=lookup.KEY_LENGTH, pattern=TEXT, description="a tape's id")
    span: Literal["entry", "turn", "session"] = "session"
    pos: WholeInt | None = Field(None, description="of an entry or turn: its (first) entry")
    end: WholeInt | None = Field(None, description="of a turn: its last entry")


class ItemsIn(BodyIn):
    items: list[TargetIn] = Field([], max_length=queues.MAX_ADD)
    query: str | None = Field(
        None,
        max_length=4000,
        pattern=TEXT,
        description="a session index query string (q=...&kind=...): its sessions are added",
    )
    reviewer: str | None = Field(None, max_length=150, pattern=TEXT, description="a user name to assign")


class AddedOut(Schema):
    added: int
    skipped: int = Field(description="in the queue already")


router = Router(tags=["queues"])


def queue_out(q: Queue, p: queues.Progress) -> dict:
    tallies = [
        {"reviewer": name or None, "total": t.total, "done": t.done} for name, t in p.reviewers.items()
    ]
    return {
        "id": q.pk,
        "name": q.name,
        "description": q.description,
        "created_by": q.created_by,
        "created_at": q.created_at,
        "total": p.total,
        "done": p.done,
        "reviewers": tallies,
    }


def item_out(i: QueueItem) -> dict:
    return {
        "id": i.pk,
        "tape": i.tape_key,
        "source": i.source,
        "label": i.label,
        "span": i.span,
        "pos": i.pos,
        "end": i.end,
        "reviewer": i.reviewer.get_username() if i.reviewer else None,
        "added_by": i.added_by,
        "added_at": i.added_at,
        "done": i.done,
        "gone": i.gone,
    }


@router.get("/queues", response=responses({200: QueueListOut}))
def list_queues(request: HttpRequest) -> dict:
    """Every review queue by name, with its progress: done of total, and per reviewer."""
    found = list(Queue.objects.order_by("name"))
    board = queues.progress(found)
    return {"items": [queue_out(q, board[q.pk]) for q in found]}


@router.post("/queues", response=responses({201: QueueOut}, 400, 403))
def create_queue(request: HttpRequest, body: QueueIn) -> Status:
    """Make an empty queue."""
    actor = admin(request)
    try:
        queue = queues.create(body.name, body.description, actor)
    except queues.QueueRefused as exc:
        raise HttpError(400, str(exc)) from None
    return Status(201, queue_out(queue, queues.Progress()))


@router.get("/queues/{queue_id}/items", response=responses({200: ItemPageOut}, 400, 404))
def list_queue_items(request: HttpRequest, queue_id: int, filters: Query[ItemFilters]) -> dict:
    """A queue's items in the order they were added, each done or not, gone or not."""
    queue = queues.find_queue(queue_id)
    ledger.refresh_index()
    found = queues.with_state(queue.items.select_related("reviewer")).order_by("pk")
    if filters.reviewer is not None:
        found = (
            found.filter(reviewer__username=filters.reviewer)
            if filters.reviewer
            else found.filter(reviewer__isnull=True)
        )
    if filters.done is not None:
        found = found.filter(done=filters.done)
    if filters.cursor:
        found = found.filter(pk__gt=decode(filters.cursor, {"id": int})["id"])
    rows = list(found[: filters.limit + 1])
    more, rows = len(rows) > filters.limit, rows[: filters.limit]
    return {
        "items": [item_out(i) for i in queues.mark_gone(rows)],
        "next_cursor": encode({"id": rows[-1].pk}) if more else None,
    }


@router.post("/queues/{queue_id}/items", response=responses({201: AddedOut}, 400, 403, 404))
def add_queue_items(request: HttpRequest, queue_id: int, body: ItemsIn) -> Status:
    """Add entries, turns or sessions (`items`), or the sessions of a session index filter (`query`)."""
    actor = writer(request)
    queue = queues.find_queue(queue_id)
    if not body.items and body.query is None:
        raise HttpError(400, "name the items to add, or a query of the session index")
    reviewer = None
    if body.reviewer:
        reviewer = get_user_model().objects.filter(username=body.reviewer).first()
        if reviewer is None:
            raise HttpError(400, f"no user {body.reviewer[:150]!r}")
    try:
        targets = [queues.target(t.tape, t.span, t.pos, t.end) for t in body.items]
        if body.query is not None:
            targets += queues.targets_of(body.query.lstrip("?"))
        added = queues.add(queue, targets, actor, reviewer=reviewer, query=body.query)
    except queues.QueueRefused as exc:
        raise HttpError(400, str(exc)) from None
    return Status(201, {"added": added.added, "skipped": added.skipped})
