"""The page of a write queued for another host: where it stands, polled until it is carried out."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tapeview.accounts.audit import Actor
from tapeview.accounts.roles import role_required

from . import queue
from .answers import detail, result_of
from .models import Request

TEMPLATE = "outbox/request_status.html"


def request_status(request: HttpRequest, key: str) -> HttpResponse:
    """Template `outbox/request_status.html` (`queued`, `detail`, `result`); htmx asks for `#panel`."""
    queued = get_object_or_404(Request, key=key)
    template = f"{TEMPLATE}#panel" if request.htmx else TEMPLATE
    return render(request, template, _context(queued))


def queued_page(request: HttpRequest, queued: Request) -> HttpResponse:
    """202: the write is queued on its host; the panel polls until it is carried out."""
    return render(request, TEMPLATE, _context(queued), status=202)


@require_POST
@role_required("operator")
def request_cancel(request: HttpRequest, key: str) -> HttpResponse:
    """Take back a queued write; 409 (the page, saying why) once it is running or done."""
    queued = get_object_or_404(Request, key=key)
    try:
        queue.cancel(queued, Actor.of(request.user))
    except queue.NotCancellable as exc:
        return render(request, TEMPLATE, {**_context(queued), "refused": str(exc)}, status=409)
    messages.info(request, "Cancelled: nothing was written.")
    return redirect("outbox:request_status", key=queued.key)


def _context(queued: Request) -> dict:
    result = result_of(queued)
    body = result.body if result is not None and isinstance(result.body, dict) else {}
    return {"queued": queued, "detail": detail(queued), "result": result, "body": body}
