"""URLs of the outbox's pages."""

from django.urls import path

from . import views

app_name = "outbox"

urlpatterns = [
    path("<str:key>/", views.request_status, name="request_status"),
    path("<str:key>/cancel", views.request_cancel, name="request_cancel"),
]
