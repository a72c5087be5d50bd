"""`/metrics`: prometheus-client's own Django view, behind the metrics guard."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views.decorators.http import require_safe
from prometheus_client.django import PrometheusDjangoView

from tapeview.accounts import throttle

from . import access
from .registry import REGISTRY


@method_decorator([login_not_required, require_safe], name="dispatch")
class MetricsView(PrometheusDjangoView):
    """The Prometheus text format (or OpenMetrics, when the scraper's Accept asks for it)."""

    registry = REGISTRY

    def dispatch(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            access.check(request)
        except throttle.Throttled as exc:
            response = JsonResponse({"detail": exc.message}, status=429)
            response["Retry-After"] = str(exc.retry_after)
            return response
        except access.Refused as refused:
            response = JsonResponse({"detail": refused.detail}, status=refused.status)
            if refused.status == 401:
                response["WWW-Authenticate"] = "Bearer"
            return response
        return super().dispatch(request, *args, **kwargs)
