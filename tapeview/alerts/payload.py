"""What a webhook is sent: JSON that Slack's incoming webhooks take (`text`), with the alert's fields."""

from __future__ import annotations

from .models import Alert, Event


def body(alert: Alert, event: Event) -> dict:
    rule = alert.rule
    verb = "FIRING" if event.kind == Event.FIRED else "cleared"
    return {
        "text": f"[{verb}] {rule.name}: {event.text}",
        "alert": {
            "id": alert.pk,
            "event": event.kind,
            "state": alert.state,
            "at": event.at.isoformat(),
            "rule": rule.name,
            "condition": rule.condition,
            "threshold": rule.threshold,
            "minutes": rule.minutes,
            "scope": rule.scope,
            "scope_value": rule.scope_value,
            "subject": alert.subject,
            "tape": alert.tape.key if alert.tape else None,
            "source": alert.tape.source if alert.tape else None,
            "host": alert.tape.host if alert.tape else None,
            "label": alert.label,
            "value": event.value,
            "text": event.text,
            "fired_at": alert.fired_at.isoformat(),
            "cleared_at": alert.cleared_at.isoformat() if alert.cleared_at else None,
        },
    }
