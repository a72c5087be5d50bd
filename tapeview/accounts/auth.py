"""Who calls the API: a service with a Bearer token, or a person signed in to the browser session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja.errors import AuthorizationError, HttpError
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from . import throttle, tokens
from .audit import Actor
from .models import ApiToken
from .roles import has_role


@dataclass(frozen=True)
class Caller:
    """What an API call may do, and the name its writes are recorded under."""

    actor: Actor
    can_write: bool
    token: ApiToken | None = None

    def log_name(self) -> str:
        """Who the server's log says asked: a person's username; a token's name, id and the prefix
        its admins see on Tokens (never the secret), and the user who made it."""
        if self.token is None:
            return self.actor.name
        maker = self.token.created_by
        made = f", made by {maker.get_username()}" if maker is not None else ""
        return f"{self.actor.name} (id {self.token.pk}, {self.token.prefix}...{made})"


class TokenAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Caller | None:
        row = tokens.verify(token)
        if row is None:
            # Only bad tokens are throttled: a service retrying a revoked token from a shared
            # host never locks out the valid tokens of the others there.
            if not throttle.allowed(request, throttle.TOKEN):
                raise throttle.Throttled()
            throttle.failed(request, throttle.TOKEN)
            # For the log line of the 401: which token failed, by the prefix its admins see.
            shown = (
                f"{token[: tokens.SHOWN]}..." if token.startswith(tokens.PREFIX) else "(not a Tapeview token)"
            )
            request.refused_token = shown  # type: ignore[attr-defined]
            return None
        if row.scope == ApiToken.METRICS:
            raise AuthorizationError(message="a token with metrics scope reads /metrics only")
        return Caller(Actor(f"token:{row.name}"), row.scope == ApiToken.WRITE, row)


class SessionAuth(APIKeyCookie):
    """The browser session, with Django's CSRF check on unsafe methods (as ninja's SessionAuth).

    Unlike ninja's, the CSRF check runs only for a signed-in session: a call with a wrong token and
    no session gets 401, not a 403 about CSRF.
    """

    param_name = settings.SESSION_COOKIE_NAME

    def _get_key(self, request: HttpRequest) -> str | None:
        if not request.user.is_authenticated:
            return None
        if (
            self.csrf
            and not getattr(request, "_ninja_csrf_exempt", False)
            and check_csrf(request) is not None
        ):
            raise HttpError(403, "CSRF check failed: send the X-CSRFToken header with the session cookie")
        return request.COOKIES.get(self.param_name, "")

    def authenticate(self, request: HttpRequest, key: str | None) -> Caller | None:
        user = request.user
        if key is None or not user.is_authenticated:
            return None
        return Caller(Actor.of(user), has_role(user, "operator"))


def caller(request: HttpRequest) -> Caller:
    return request.auth  # type: ignore[attr-defined]


def writer(request: HttpRequest) -> Actor:
    """The actor of a write; 403 for a read token or a viewer."""
    who = caller(request)
    if not who.can_write:
        raise AuthorizationError(
            message="this needs a token with write scope" if who.token else "this needs the operator role"
        )
    return who.actor


def admin(request: HttpRequest) -> Actor:
    """The actor of an admin's change (alert rules, review queues): a signed-in admin, or a token with
    write scope (only admins make tokens); 403 otherwise."""
    who = caller(request)
    if who.token is not None:
        if not who.can_write:
            raise AuthorizationError(message="this needs a token with write scope")
    elif who.actor.user is None or not has_role(who.actor.user, "admin"):
        raise AuthorizationError(message="this needs the admin role")
    return who.actor


def docs_access(view: Callable) -> Callable:
    """The OpenAPI document and the docs page: for signed-in people and token holders only."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            allowed = request.user.is_authenticated or TokenAuth()(request)
        except throttle.Throttled as exc:
            response = JsonResponse({"detail": exc.message}, status=429)
            response["Retry-After"] = str(exc.retry_after)
            return response
        except AuthorizationError as exc:
            return JsonResponse({"detail": exc.message}, status=403)
        if allowed:
            return view(request, *args, **kwargs)
        if request.path.endswith(".json"):
            response = JsonResponse({"detail": "sign in or send Authorization: Bearer <token>"}, status=401)
            response["WWW-Authenticate"] = "Bearer"
            return response
        return redirect_to_login(request.get_full_path())

    return wrapped
