"""The site's error answers: the styled pages, or `{"detail": ...}` JSON under /api/.

Django calls these for what never reaches a view's own handling: a body over the size limit (413)
or a request refused for another reason it can name (400), an unknown URL (404), a refusal raised
outside the API (403), a failed CSRF check (403), a crash (500); and a method an API endpoint does
not take (405), which ninja answers in plain text.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from django.conf import settings
from django.contrib.sessions.exceptions import InvalidSessionKey, SuspiciousSession
from django.core.exceptions import (
    BadRequest,
    DisallowedHost,
    RequestDataTooBig,
    SuspiciousMultipartForm,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render
from django.template.defaultfilters import filesizeformat
from django.template.loader import render_to_string
from django.views import csrf, defaults

from tapeview.sources import FileChanging, FileUnreadable, TapeNotFound, WriteFailed

RETRY_AFTER_DOWN = 5  # seconds: a database restart is usually over by then

REASON_CHARS = 300  # a BadRequest's words, shown at most this long
# What a 400 says of what Django refused (the limits filled in from the settings).
REASONS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (RequestDataTooBig, "The request's body is too large: this server accepts at most {body}."),
    (TooManyFieldsSent, "The form sent too many fields: this server accepts at most {fields}."),
    (TooManyFilesSent, "The form sent too many files: this server accepts at most {files}."),
    (
        DisallowedHost,
        "This server does not answer to the host name in the address "
        "(TAPEVIEW_ALLOWED_HOSTS names the ones it does).",
    ),
    ((MultiPartParserError, SuspiciousMultipartForm), "The form's body could not be read as form data."),
    ((InvalidSessionKey, SuspiciousSession), "The session cookie could not be read: sign in again."),
)
MESSAGES = {
    400: "bad request: the body is too large or malformed",
    403: "forbidden",
    404: "not found",
    500: "server error: if you were writing, the audit log says whether it was written",
}


def _json(request: HttpRequest, status: int) -> JsonResponse | None:
    return (
        JsonResponse({"detail": MESSAGES[status]}, status=status)
        if request.path.startswith("/api/")
        else None
    )


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """400: why, where it is known (bad_request_reason), else that it was too large or malformed.

    Rendered without the request, as Django's own: the request may be what cannot be read (its
    host refused, its body), so no context processor looks at it."""
    reason = bad_request_reason(exception)
    status = 413 if isinstance(exception, RequestDataTooBig) else 400  # Content Too Large
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": reason or MESSAGES[400]}, status=status)
    return HttpResponseBadRequest(render_to_string("400.html", {"reason": reason}), status=status)


def bad_request_reason(exception: Exception) -> str:
    """What a 400's page says of its cause: our words for what Django refused, never its own text
    (a DisallowedHost's names the host sent, a multipart error's the boundary); a BadRequest's own
    words, which are ours (the views raise it) or Django's fixed ones; "" when it cannot be told."""
    limits = {
        "body": _size(settings.DATA_UPLOAD_MAX_MEMORY_SIZE),
        "fields": settings.DATA_UPLOAD_MAX_NUMBER_FIELDS or "no limit",
        "files": settings.DATA_UPLOAD_MAX_NUMBER_FILES or "no limit",
    }
    for kinds, words in REASONS:
        if isinstance(exception, kinds):
            return words.format(**limits)
    if isinstance(exception, BadRequest) and exception.args and isinstance(exception.args[0], str):
        return exception.args[0][:REASON_CHARS]
    return ""


def _size(n: int | None) -> str:
    return "no limit" if n is None else filesizeformat(n).replace("\xa0", " ")


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _json(request, 403) or defaults.permission_denied(request, exception)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """403 for a write without its CSRF token: a browser's session needs the token; under /api/, a
    service that sends an API token is never asked for one."""
    if request.path.startswith("/api/"):
        detail = "forbidden: a signed-in browser's write needs its CSRF token; a service sends an API token"
        return JsonResponse({"detail": detail}, status=403)
    return csrf.csrf_failure(request, reason)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _json(request, 404) or defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        return database_down(request)
    return _json(request, 500) or defaults.server_error(request)


def database_down(request: HttpRequest) -> HttpResponse:
    """The index's database unreachable (restarting, the network cut), wherever it was met (a view,
    the session middleware): 503 with a retry hint, not a 500. Nothing was wrong with the request."""
    detail = "the index's database cannot be reached just now: try again in a few seconds"
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": detail}, status=503)
    else:  # a page that asks the database nothing: no request context, so no user and no menu
        response = HttpResponse(render_to_string("unavailable.html", {"detail": detail}), status=503)
    response["Retry-After"] = str(RETRY_AFTER_DOWN)
    return response


class WriteFailedMiddleware:
    """A write the disk refused (full, I/O error) is 507 with what happened, on every page.

    The writers leave the file as it was and raise WriteFailed; this is the one place that tells
    the user, instead of a 500 that says nothing.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, WriteFailed):
            return None
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": str(exception)}, status=507)
        return render(request, "write_failed.html", {"error": exception}, status=507)


class FileGoneMiddleware:
    """A file gone between a page's lookup and its read (deleted, reset; another host's, with no
    copy here) is a 404 that says so, on every page, instead of a 500. Bytes that are on their way
    (another host's, not copied here yet: the exception's `retry_after`) are a 503 with a retry hint,
    and so is a file caught mid-rewrite; a file this process may not read is a 503 that names it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, FileUnreadable | FileChanging):
            return cannot_read(request, exception)
        if not isinstance(exception, TapeNotFound):
            return None
        retry_after = getattr(exception, "retry_after", None)
        if retry_after is not None:
            return not_here_yet(request, exception.detail, retry_after)
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": exception.detail}, status=404)
        return defaults.page_not_found(request, Http404(exception.detail))


def not_here_yet(request: HttpRequest, detail: str, retry_after: int) -> HttpResponse:
    """503 with Retry-After: what was asked for exists, and will be readable here shortly."""
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": detail, "retry_after": retry_after}, status=503)
    else:
        response = render(request, "not_here_yet.html", {"detail": detail}, status=503)
    response["Retry-After"] = str(retry_after)
    return response


def cannot_read(request: HttpRequest, exception: FileUnreadable | FileChanging) -> HttpResponse:
    """503: a source file this process may not read (named; the operator fixes its mode), or one
    its agent was rewriting at every look (with Retry-After)."""
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": exception.detail}, status=503)
    else:
        ctx = {"detail": exception.detail, "changing": isinstance(exception, FileChanging)}
        response = render(request, "cannot_read.html", ctx, status=503)
    if isinstance(exception, FileChanging):
        response["Retry-After"] = str(exception.retry_after)
    return response


class MethodNotAllowedMiddleware:
    """ninja answers a method an endpoint does not take with Django's plain-text 405: under /api/
    it is `{"detail": ...}` as every other answer there, naming the methods the endpoint takes."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code != 405
            or not request.path.startswith("/api/")
            or "json" in response["Content-Type"]
        ):
            return response
        allowed = response.get("Allow", "")
        answer = JsonResponse(
            {"detail": f"{request.method} is not allowed here: {allowed or 'no method'}"}, status=405
        )
        answer["Allow"] = allowed
        return answer
