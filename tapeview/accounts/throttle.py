"""Failed sign-ins count against the client's address and the name tried, in django-axes.

A wrong password counts against that address and user name: past the limit that name waits, from
that address only, while everyone else there signs in. Bad one-time links and bad API tokens count
against the address under a name of their own ("(sign-in link)", "(api token)"): past the limit
they get 429, while a valid link or token is still taken. The count is kept in the database, so
every web process sees it.
"""

from __future__ import annotations

from datetime import timedelta

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_client_username
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.timesince import timeuntil
from ninja.errors import HttpError

# What axes records as the "username" of each kind of attempt (never the secret itself).
TOKEN = {"username": "(api token)"}
LINK = {"username": "(sign-in link)"}


def cooloff() -> int:
    """Seconds a locked-out attempt waits."""
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


def in_words(seconds: int) -> str:
    """`15 minutes`, `1 hour, 30 minutes`: as the lockout page says it."""
    now = timezone.now()
    return timeuntil(now + timedelta(seconds=seconds), now).replace("\xa0", " ")


class Throttled(HttpError):
    """Too many bad tokens from this address. Retry after `retry_after` seconds."""

    def __init__(self) -> None:
        self.retry_after = cooloff()
        super().__init__(
            429, f"too many failed sign-ins with bad tokens from this address: retry in {self.retry_after} s"
        )


def allowed(request: HttpRequest, credentials: dict) -> bool:
    return AxesProxyHandler.is_allowed(request, credentials)


def failed(request: HttpRequest, credentials: dict) -> None:
    user_login_failed.send(sender=__name__, credentials=credentials, request=request)
    # This answer stays what the caller says (401, 403); the next attempt is refused by its check.
    request.axes_locked_out = False


def lockout(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    """The lockout page (429, Retry-After), for axes (AXES_LOCKOUT_CALLABLE) and the link's view."""
    name = get_client_username(request, credentials)
    context = {"wait": in_words(cooloff()), "link": name == LINK["username"], "username": name}
    response = render(request, "registration/locked_out.html", context, status=429)
    response["Retry-After"] = str(cooloff())
    return response
