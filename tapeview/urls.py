"""URLs of the whole site: one include per app, and the API."""

from __future__ import annotations

from django.urls import include, path

from . import api

urlpatterns = [
    path("", include("tapeview.tapes.urls")),
    path("", include("tapeview.accounts.urls")),
    path("memory/", include("memory_admin.urls")),
    path("search/", include("tapeview.search.urls")),
    path("api/", api.urls()),
]

handler400 = "tapeview.errors.bad_request"
handler403 = "tapeview.errors.permission_denied"
handler404 = "tapeview.errors.page_not_found"
handler500 = "tapeview.errors.server_error"
