"""Who may read `/metrics`: a request with a live token of metrics scope, or a scraper on this machine.

A request that sends a token is judged by its token alone. Without one, only a request from a
loopback address (127.0.0.0/8, ::1) that carries none of the headers a proxy adds, and only while
TAPEVIEW_METRICS_LOCAL is on (off by default behind a proxy: waitress drops an untrusted proxy's
headers, so a proxy on this machine would make every client it relays local).
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest

from tapeview.accounts import throttle, tokens
from tapeview.accounts.models import ApiToken

PROXY_HEADERS = ("HTTP_FORWARDED", "HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP", "HTTP_X_FORWARDED_HOST")
ASK = (
    "send Authorization: Bearer <token> (`tapeview token create NAME --scope metrics`), "
    "or scrape from this machine"
)


class Refused(Exception):
    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def check(request: HttpRequest) -> None:
    """Return if the request may read the metrics; raise Refused (401 or 403), or throttle.Throttled
    for an address past its failed tokens, if not."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header:
        scheme, _, plaintext = header.partition(" ")
        if scheme.lower() != "bearer" or not plaintext.strip():
            raise Refused(401, ASK)
        row = tokens.verify(plaintext.strip())
        if row is None:
            # As the API: only bad tokens are throttled, a valid one is taken from a locked address.
            if not throttle.allowed(request, throttle.TOKEN):
                raise throttle.Throttled()
            throttle.failed(request, throttle.TOKEN)
            raise Refused(401, "not a live token: " + ASK)
        if row.scope != ApiToken.METRICS:
            raise Refused(403, f"this needs a token with metrics scope (this one is {row.scope})")
        return
    if not local(request):
        raise Refused(401, ASK)


def local(request: HttpRequest) -> bool:
    if not settings.TAPEVIEW_METRICS_LOCAL or any(request.META.get(h) for h in PROXY_HEADERS):
        return False
    try:
        return ipaddress.ip_address(request.META.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False
