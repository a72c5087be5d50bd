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
