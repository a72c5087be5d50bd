"""Every request counted by status and timed, in this process (each web process counts its own)."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from prometheus_client import Counter, Histogram

from .registry import REGISTRY

REQUESTS = Counter(
    "tapeview_http_requests",
    "Requests answered by this process, by method, view and status",
    ["method", "view", "status"],
    registry=REGISTRY,
)
LATENCY = Histogram(
    "tapeview_http_request_duration_seconds",
    "Time to answer a request in this process (the response's body streamed after it is not counted)",
    ["method", "view"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
    registry=REGISTRY,
)
METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}


class RequestMetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        start = time.perf_counter()
        response = self.get_response(request)
        # Labels from a bounded set only: the URL pattern's name, never the path a client sent.
        match = request.resolver_match
        view = (match.view_name or "unnamed") if match is not None else "unmatched"
        method = request.method if request.method in METHODS else "other"
        LATENCY.labels(method, view).observe(time.perf_counter() - start)
        REQUESTS.labels(method, view, str(response.status_code)).inc()
        return response
