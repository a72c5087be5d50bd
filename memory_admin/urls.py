"""URLs of the memory app."""

from django.urls import path

from . import views

app_name = "memory_admin"

urlpatterns = [
    path("tapes/<str:key>/", views.zone_detail, name="zone_detail"),
]
