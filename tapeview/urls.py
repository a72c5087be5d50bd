"""URLs of the whole site."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import accounts, api, tokens_views, users, views

tape_urls = [
    path("", views.tape_list, name="tape_list"),
    path("sources/", views.source_list, name="source_list"),
    path("users/", users.user_list, name="user_list"),
    path("users/<int:user_id>/role", users.user_role, name="user_role"),
    path("users/<int:user_id>/active", users.user_active, name="user_active"),
    path("users/<int:user_id>/link", users.user_link, name="user_link"),
    path("tokens/", tokens_views.token_list, name="token_list"),
    path("tokens/<int:token_id>/revoke", tokens_views.token_revoke, name="token_revoke"),
    path("tapes/<str:key>/", views.tape_detail, name="tape_detail"),
    path("tapes/<str:key>/context", views.tape_context, name="tape_context"),
    path("tapes/<str:key>/handoff", views.tape_handoff, name="tape_handoff"),
    path("tapes/<str:key>/entries/<int:pos>/", views.entry_detail, name="entry_detail"),
    path("tapes/<str:key>/entries/<int:pos>/raw", views.entry_raw, name="entry_raw"),
]

urlpatterns = [
    path("", include((tape_urls, "tapeview"))),
    path("memory/", include("memory_admin.urls")),
    path("search/", include("tapeview.search.urls")),
    path("api/", api.urls()),
    path("signin/<str:token>/", accounts.signin_link, name="signin_link"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", accounts.PasswordView.as_view(), name="password_change"),
]
