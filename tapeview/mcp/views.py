"""/mcp: one JSON-RPC request per POST (MCP 2026-07-28), for a caller with a live API token.

The token is checked, and failures counted against the address, exactly as the REST API does
(`accounts.auth.TokenAuth`); the exchange itself is the SDK's, bridged to Django by django-stateless-mcp.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django_stateless_mcp import mcp_view
from mcp.server.context import ServerRequestContext
from ninja.errors import AuthorizationError

from tapeview.accounts.auth import TokenAuth
from tapeview.accounts.throttle import Throttled

from .server import build
from .tools import ToolFailed

REFUSED = "send Authorization: Bearer <token> (a live API token: tapeview token create NAME)"


def _django_request(ctx: ServerRequestContext[Any, Any]) -> HttpRequest:
    request = getattr(getattr(ctx.request, "state", None), "django_request", None)
    if request is None or getattr(request, "auth", None) is None:
        raise ToolFailed(401, {"detail": REFUSED})
    return request


_served = mcp_view(build(_django_request))


@csrf_exempt  # a token is not a session: nothing for a forged form to ride on
@login_not_required  # a caller without a token gets 401, not the sign-in page
def endpoint(request: HttpRequest) -> HttpResponseBase:
    try:
        caller = TokenAuth()(request)
    except Throttled as exc:
        response: HttpResponse = JsonResponse({"detail": exc.message}, status=429)
        response["Retry-After"] = str(exc.retry_after)
        return response
    except AuthorizationError as exc:  # a live token of a scope the tools do not take (metrics)
        return JsonResponse({"detail": exc.message}, status=403)
    if not caller:
        response = JsonResponse({"detail": REFUSED}, status=401)
        response["WWW-Authenticate"] = "Bearer"
        return response
    request.auth = caller  # type: ignore[attr-defined]
    return async_to_sync(_served)(request)
