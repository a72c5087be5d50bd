"""The REST API: one NinjaAPI with the tapes, search and memory routers, and every error mapped once."""

from __future__ import annotations

from django.apps import apps
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI, Swagger
from ninja.errors import AuthenticationError, ValidationError
from ninja.operation import Operation

from memory_admin.api import router as memory_router
from memory_admin.stores.model import StoreError
from tapeview.accounts.auth import SessionAuth, TokenAuth, docs_access
from tapeview.accounts.throttle import Throttled
from tapeview.errors import cannot_read, not_here_yet
from tapeview.outbox import handlers as outbox_handlers
from tapeview.outbox.api import router as outbox_router
from tapeview.reviews.api import router as reviews_router
from tapeview.sources import AgentStopped, FileChanging, FileUnreadable, TapeBusy, TapeNotFound, WriteFailed
from tapeview.tapes.api import entries, handoffs, tapes
from tapeview.tapes.api.cursor import BadCursor
from tapeview.tapes.api.schemas import busy_detail
from tapeview.tapes.context import AnchorNotFound
from tapeview.tapes.handoff import HandoffRefused, HandoffStale


class TapeviewAPI(NinjaAPI):
    def get_openapi_operation_id(self, operation: Operation) -> str:
        # The function's own name (list_tapes, get_store, ...) is what a generated client calls.
        return operation.view_func.__name__


class Docs(Swagger):
    """ninja's Swagger page with a link back to the dashboard (`templates/api/docs.html`)."""

    template = "api/docs.html"


api = TapeviewAPI(
    title="Tapeview API",
    version="1",
    description=(
        "Tapes and memory of AI agents. Authenticate with `Authorization: Bearer <token>` "
        "(`tapeview token create NAME --scope read|write`) or the browser session. Errors are "
        '`{"detail": ...}`. Lists take `?limit=` (default 50, at most 500) and `?cursor=`, and '
        'answer `{"items": [...], "next_cursor": ...}`: pass `next_cursor` back for the next page.'
    ),
    urls_namespace="api",
    auth=[TokenAuth(), SessionAuth()],
    docs=Docs(),
    docs_decorator=docs_access,
)
api.add_router("", tapes.router)
api.add_router("", entries.router)
api.add_router("", handoffs.router)
api.add_router("", "tapeview.tapes.api.analysis.router")
api.add_router("", "tapeview.tapes.api.compare.router")
api.add_router("", "tapeview.tapes.api.turns.router")
api.add_router("", reviews_router)
api.add_router("", "tapeview.reviews.queue_api.router")
if apps.is_installed("tapeview.search"):
    # Imported only where installed: search is an optional app, and its models exist only then.
    from tapeview.search.api import router as search_router

    api.add_router("", search_router)
api.add_router("/memory", memory_router)
api.add_router("", outbox_router)
api.add_router("", "tapeview.alerts.api.router")


def _error(request: HttpRequest, status: int, detail: object) -> HttpResponse:
    return api.create_response(request, {"detail": detail}, status=status)


@api.exception_handler(AuthenticationError)
def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = _error(request, 401, "sign in, or send Authorization: Bearer <token> (a live token)")
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(ValidationError)
def invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    # Only where, what and why: pydantic's `input` and `ctx` may echo large or unserialisable values.
    errors = [
        {
            "loc": _where(e.get("loc", ())),
            "msg": str(e.get("msg", "")),
            "type": str(e.get("type", "")),
        }
        for e in exc.errors
    ]
    return _error(request, 422, errors)


def _where(loc: tuple) -> list[int | str]:
    """An error's place as the client sent it: ninja names a body field after the view's parameter
    too (["body", "body", "name"]); the client sent ["body", "name"], and ["body"] for the body
    itself (each view takes its body as one parameter)."""
    where = [p if isinstance(p, int) else str(p) for p in loc]
    return [where[0], *where[2:]] if where[:1] == ["body"] and len(where) >= 2 else where


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _error(request, 404, str(exc) or "not found")


@api.exception_handler(TapeNotFound)
def tape_gone(request: HttpRequest, exc: TapeNotFound) -> HttpResponse:
    retry_after = getattr(exc, "retry_after", None)  # bytes on their way (another host's copy)
    if retry_after is not None:
        return not_here_yet(request, exc.detail, retry_after)
    return _error(request, 404, exc.detail)


@api.exception_handler(FileUnreadable)
@api.exception_handler(FileChanging)
def unreadable_file(request: HttpRequest, exc: FileUnreadable | FileChanging) -> HttpResponse:
    return cannot_read(request, exc)


@api.exception_handler(AnchorNotFound)
def anchor_not_found(request: HttpRequest, exc: AnchorNotFound) -> HttpResponse:
    return _error(request, 404, str(exc))


@api.exception_handler(PermissionDenied)
def forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return _error(request, 403, str(exc) or "forbidden")


@api.exception_handler(Throttled)
def throttled(request: HttpRequest, exc: Throttled) -> HttpResponse:
    response = _error(request, 429, exc.message)
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(TapeBusy)
def busy(request: HttpRequest, exc: TapeBusy) -> HttpResponse:
    """The agent is writing: nothing was written; the client retries after Retry-After seconds."""
    retry_after = max(1, round(exc.retry_after))
    stopped = isinstance(exc, AgentStopped)
    detail = busy_detail(str(exc), retry_after, stopped)
    body = {"detail": detail, "retry_after": retry_after, "stopped": stopped}
    response = api.create_response(request, body, status=409)
    response["Retry-After"] = str(retry_after)
    return response


@api.exception_handler(HandoffStale)
def stale_handoff(request: HttpRequest, exc: HandoffStale) -> HttpResponse:
    """The tape ends elsewhere than where the caller saw it: nothing was written."""
    return api.create_response(request, {"detail": str(exc), "last_id": exc.now}, status=409)


@api.exception_handler(WriteFailed)
def write_failed(request: HttpRequest, exc: WriteFailed) -> HttpResponse:
    """The disk refused the write (full, I/O error): the file was left as it was."""
    return _error(request, 507, str(exc))


def _bad_request(request: HttpRequest, exc: Exception) -> HttpResponse:
    return _error(request, 400, str(exc))


for refused in (StoreError, HandoffRefused, BadCursor):
    api.add_exception_handler(refused, _bad_request)


def _outbox_answer(exc: Exception) -> HttpResponse:
    """A write the outbox carried out on its host: what it raised, answered as this API answers it."""
    return api.on_exception(HttpRequest(), exc)


outbox_handlers.answer_errors_with(_outbox_answer)


@csrf_exempt  # as every endpoint is (a service's token is not a session): a 404, never a CSRF page
def unknown_endpoint(request: HttpRequest, path: str) -> HttpResponse:
    return JsonResponse({"detail": f"no endpoint /api/{path}: see /api/docs"}, status=404)


def urls() -> tuple:
    """The API's URL patterns: the site's login redirect is not for them, ninja's auth answers 401."""
    patterns, app_name, namespace = api.urls
    patterns = [*patterns, path("<path:path>", unknown_endpoint)]
    for pattern in patterns:
        login_not_required(pattern.callback)
    return patterns, app_name, namespace
