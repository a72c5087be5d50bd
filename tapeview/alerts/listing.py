"""Alerts as the page and the API list them: firing first (newest first), then cleared, with history."""

from __future__ import annotations

from django.db.models import Case, IntegerField, Prefetch, QuerySet, Value, When

from .models import Alert, Delivery, Event

HISTORY = 20  # events shown with each alert
PAGE = 500  # alerts on the page (the API pages through them all)


def alerts(state: str | None = None) -> QuerySet[Alert]:
    found = Alert.objects.select_related("rule", "tape")
    if state:
        found = found.filter(state=state)
    firing_first = Case(
        When(state=Alert.FIRING, then=Value(0)), default=Value(1), output_field=IntegerField()
    )
    events = Event.objects.prefetch_related(Prefetch("deliveries", Delivery.objects.order_by("pk")))
    return (
        found.annotate(rank=firing_first)
        .order_by("rank", "-fired_at", "-pk")
        .prefetch_related(Prefetch("events", events))
    )


def history(alert: Alert) -> list[Event]:
    return list(alert.events.all())[:HISTORY]
