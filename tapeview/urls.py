"""URLs of the whole site: one include per app, and the API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from . import api
from .mcp.views import endpoint as mcp_endpoint

urlpatterns = [
    path("", include("tapeview.tapes.urls")),
    path("", include("tapeview.reviews.urls")),
    path("", include("tapeview.accounts.urls")),
    path("memory/", include("memory_admin.urls")),
    path("search/", include("tapeview.search.urls")),
    path("outbox/", include("tapeview.outbox.urls")),
    path("alerts/", include("tapeview.alerts.urls")),
    path("api/", api.urls()),
    re_path(r"^mcp/?$", mcp_endpoint, name="mcp"),
    path("", include("tapeview.metrics.urls")),
    # Browsers ask for /favicon.ico whatever the page says: send them the real one.
    path("favicon.ico", login_not_required(RedirectView.as_view(url=static("favicon.svg"), permanent=True))),
]

handler400 = "tapeview.errors.bad_request"
handler403 = "tapeview.errors.permission_denied"
handler404 = "tapeview.errors.page_not_found"
handler500 = "tapeview.errors.server_error"
