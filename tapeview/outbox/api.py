"""The outbox API: where a queued write stands, and taking it back while it is queued."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import Http404, HttpRequest
from ninja import Field, Router, Schema, Status

from tapeview.accounts.auth import writer

from . import queue
from .answers import status_out
from .models import Request


class ResultOut(Schema):
    status: int = Field(description="the HTTP status the write answered with")
    body: Any = Field(description="the JSON body it answered with")


class OutboxRequestOut(Schema):
    id: str
    state: str = Field(description="queued, running, done, failed or cancelled")
    host: str = Field(description="the host whose watcher carries it out")
    action: str
    status_url: str
    detail: str
    created_at: datetime
    claimed_at: datetime | None
    finished_at: datetime | None
    cancelled_by: str
    result: ResultOut | None = Field(description="once done (or failed): the write's own answer")


class ErrorOut(Schema):
    detail: str


router = Router(tags=["outbox"])


def _request(request_id: str) -> Request:
    found = Request.objects.filter(key=request_id).first() if len(request_id) <= 32 else None
    if found is None:
        raise Http404("no such outbox request")
    return found


@router.get(
    "/outbox/{request_id}",
    response={200: OutboxRequestOut, 404: ErrorOut},
    url_name="get_outbox_request",
)
def get_outbox_request(request: HttpRequest, request_id: str) -> dict:
    """A write queued for the host that owns its file (the 202 of a write names it): once `done`,
    `result` is what the write answered (201, 200, 409 ...)."""
    return status_out(_request(request_id))


@router.post(
    "/outbox/{request_id}/cancel",
    response={200: OutboxRequestOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut},
)
def cancel_outbox_request(request: HttpRequest, request_id: str) -> Status:
    """Take back a queued write, so that no watcher carries it out; 409 once it is running or done."""
    actor = writer(request)
    queued = _request(request_id)
    try:
        return Status(200, status_out(queue.cancel(queued, actor)))
    except queue.NotCancellable as exc:
        return Status(409, {"detail": str(exc)})
