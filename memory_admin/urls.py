"""URLs of the memory app."""

from django.urls import path, re_path

from . import actions, past_pages, restores, views

app_name = "memory_admin"

urlpatterns = [
    path("", views.store_list, name="store_list"),
    path("tapes/<str:key>/", views.zone_of_tape, name="zone_detail"),
    path("<str:key>/", views.store_detail, name="store_detail"),
    path("<str:key>/edit", views.store_edit, name="store_edit"),
    path("<str:key>/preview", views.store_preview, name="store_preview"),
    path("<str:key>/diff", views.store_diff, name="store_diff"),
    re_path(r"^(?P<key>[^/]+)/export\.(?P<fmt>md|json)$", views.store_export, name="store_export"),
    path("<str:key>/blame", past_pages.store_blame, name="store_blame"),
    path("<str:key>/restore", restores.store_restore, name="store_restore"),
    path("<str:key>/zone", actions.zone_action, name="zone_action"),
    path("<str:key>/entries", actions.entry_action, name="entry_action"),
    path("<str:key>/kv", actions.kv_action, name="kv_action"),
]
