"""What the web tier answers for a write it put in the outbox: the write's own answer, or 202."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.urls import reverse

from . import queue
from .handlers import Result
from .models import Request


def waited(queued: Request) -> Request:
    """The request after the wait the web tier gives it (TAPEVIEW_OUTBOX_WAIT_SECONDS)."""
    return queue.wait(queued, settings.TAPEVIEW_OUTBOX_WAIT_SECONDS)


def result_of(queued: Request) -> Result | None:
    """What the write answered, once carried out (or given up); None while it is not."""
    if queued.state not in (Request.DONE, Request.FAILED) or queued.status is None:
        return None
    return Result(queued.status, queued.body, queued.headers, queued.reason)


def api_answer(queued: Request) -> HttpResponse:
    """Exactly the synchronous endpoint's answer when carried out within the wait; else 202."""
    queued = waited(queued)
    result = result_of(queued)
    if result is not None:
        return response(result)
    status = status_out(queued)
    if queued.state == Request.CANCELLED:
        return JsonResponse(status, status=409)
    answer = JsonResponse(status, status=202)
    answer["Location"] = status["status_url"]
    return answer


def response(result: Result) -> HttpResponse:
    answer = JsonResponse(result.body, status=result.status, safe=False)
    for name, value in result.headers.items():
        answer[name] = value
    return answer


def detail(queued: Request) -> str:
    """Where a request stands, in words."""
    if queued.state == Request.QUEUED:
        return queue.unseen(queued.host) or f"queued for host {queued.host}: it carries it out shortly"
    if queued.state == Request.RUNNING:
        return f"host {queued.host} is carrying it out"
    if queued.state == Request.CANCELLED:
        return f"cancelled by {queued.cancelled_by}: nothing was written"
    body = queued.body if isinstance(queued.body, dict) else {}
    said = body.get("detail") if isinstance(body.get("detail"), str) else ""
    return said or f"carried out on host {queued.host}"


def status_out(queued: Request) -> dict:
    """The request as GET /api/outbox/{id} gives it (`result` once carried out)."""
    result = result_of(queued)
    return {
        "id": queued.key,
        "state": queued.state,
        "host": queued.host,
        "action": queued.action,
        "status_url": reverse("api:get_outbox_request", args=[queued.key]),
        "detail": detail(queued),
        "created_at": queued.created_at,
        "claimed_at": queued.claimed_at,
        "finished_at": queued.finished_at,
        "cancelled_by": queued.cancelled_by,
        "result": {"status": result.status, "body": result.body} if result else None,
    }
