"""URLs of the tapes app: the session index, sources, and each tape's pages."""

from django.urls import path, re_path

from . import views

app_name = "tapes"

urlpatterns = [
    path("", views.tape_list, name="tape_list"),
    path("sources/", views.source_list, name="source_list"),
    path("compare/", views.compare.tape_compare, name="tape_compare"),
    path("prices/", views.prices.price_list, name="prices"),
    path("saved-views/", views.sessions.savedview_create, name="savedview_create"),
    path("saved-views/<int:pk>/delete", views.sessions.savedview_delete, name="savedview_delete"),
    path("tapes/<str:key>/", views.tape_detail, name="tape_detail"),
    path("tapes/<str:key>/tail", views.timeline.tape_tail, name="tape_tail"),
    path("tapes/<str:key>/context", views.tape_context, name="tape_context"),
    path("tapes/<str:key>/handoff", views.tape_handoff, name="tape_handoff"),
    path("tapes/<str:key>/lineage", views.tape_lineage, name="tape_lineage"),
    path("tapes/<str:key>/turns/", views.tape_turns, name="tape_turns"),
    path("tapes/<str:key>/conversation/", views.tape_conversation, name="tape_conversation"),
    re_path(r"^tapes/(?P<key>[^/]+)/export\.(?P<fmt>jsonl|md)$", views.tape_export, name="tape_export"),
    path("tapes/<str:key>/entries/<int:pos>/", views.entry_detail, name="entry_detail"),
    path("tapes/<str:key>/entries/<int:pos>/raw", views.entry_raw, name="entry_raw"),
]
