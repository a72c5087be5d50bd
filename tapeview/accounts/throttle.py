"""Failed sign-ins by one-time link or API token count against the client's address, as passwords do.

django-axes keeps the count (in the database: every web process sees it); past the limit the
address gets 429 until the cool-off ends, whatever it sends.
"""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from django.conf import settings
from django.contrib.auth.signals import user_login_failed
from django.http import HttpRequest
from ninja.errors import HttpError

# What axes records as the "username" of each kind of attempt (never the secret itself).
TOKEN = {"username": "(api token)"}
LINK = {"username": "(sign-in link)"}


class Throttled(HttpError):
    """Too many failures from this address: nothing was checked. Retry after `retry_after` seconds."""

    def __init__(self) -> None:
        self.retry_after = int(settings.AXES_COOLOFF_TIME.total_seconds())
        super().__init__(429, f"too many failed sign-ins from this address: retry in {self.retry_after} s")


def allowed(request: HttpRequest, credentials: dict) -> bool:
    return AxesProxyHandler.is_allowed(request, credentials)


def check(request: HttpRequest, credentials: dict) -> None:
    if not allowed(request, credentials):
        raise Throttled()


def failed(request: HttpRequest, credentials: dict) -> None:
    user_login_failed.send(sender=__name__, credentials=credentials, request=request)
    # This answer stays what the caller says (401, 403); the next attempt is refused by check().
    request.axes_locked_out = False
