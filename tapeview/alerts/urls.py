"""URLs of the alerts app: the Alerts page and its rules."""

from django.urls import path

from . import views

app_name = "alerts"

urlpatterns = [
    path("", views.alert_list, name="alert_list"),
    path("rules/new", views.rule_create, name="rule_create"),
    path("rules/<int:rule_id>/", views.rule_edit, name="rule_edit"),
    path("rules/<int:rule_id>/delete", views.rule_delete, name="rule_delete"),
]
