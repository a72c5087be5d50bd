"""The alerts API: alerts firing first with their history; rules read by any caller, changed by admins."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Query, Router, Schema, Status
from ninja.errors import HttpError

from tapeview.accounts.audit import Actor
from tapeview.accounts.auth import admin
from tapeview.tapes.api.cursor import decode, encode
from tapeview.tapes.api.schemas import TEXT, BodyIn, PageIn, WholeInt, responses

from . import listing, rules
from .models import Alert, Event, Rule


class RuleIn(BodyIn):
    name: str = Field(max_length=100, pattern=TEXT)
    condition: str = Field(
        max_length=10,
        pattern=TEXT,
        description="errors: K errors in the last N minutes; budget: the context over its threshold; "
        "silent: no write for N minutes mid-turn; cost: USD spent today (UTC) over the limit",
    )
    threshold: float | None = Field(
        None, description="errors: K; budget: share of the window (null: TAPEVIEW_BUDGET_WARN); cost: USD"
    )
    minutes: WholeInt | None = Field(None, description="errors: the window; silent: N")
    scope: str = Field(
        "", max_length=10, pattern=TEXT, description="'' for all tapes, or the field scope_value names"
    )
    scope_value: str = Field("", max_length=255, pattern=TEXT)
    webhook: str = Field("", max_length=1000, pattern=TEXT, description="'' sends to TAPEVIEW_ALERT_WEBHOOK")
    enabled: bool = True


class RuleOut(Schema):
    id: int
    name: str
    condition: str
    threshold: float | None
    minutes: int | None
    scope: str
    scope_value: str
    webhook: str
    enabled: bool
    created_at: datetime
    updated_at: datetime


class DeliveryOut(Schema):
    url: str
    state: str = Field(description="pending (tried again later), delivered, or failed (given up)")
    attempts: int
    status_code: int | None = Field(description="the webhook's last answer; null: none")
    last_error: str
    next_at: datetime | None = Field(description="of a pending delivery: its next try")
    delivered_at: datetime | None


class EventOut(Schema):
    kind: str = Field(description="fired or cleared")
    at: datetime
    value: float | None
    text: str
    deliveries: list[DeliveryOut]


class AlertOut(Schema):
    id: int
    rule: str
    rule_id: int
    condition: str
    state: str = Field(description="firing, or cleared")
    subject: str = Field(description="the tape's id, or 'scope' for a cost rule")
    tape: str | None = Field(description="the tape's id (null: a cost rule, or the tape is gone)")
    label: str
    value: float | None
    text: str
    fired_at: datetime
    cleared_at: datetime | None
    history: list[EventOut] = Field(description="newest first, at most 20")


class AlertPageOut(Schema):
    items: list[AlertOut]
    next_cursor: str | None


class AlertFilters(PageIn):
    state: Literal["firing", "cleared"] | None = None


class RuleListOut(Schema):
    items: list[RuleOut]


router = Router(tags=["alerts"])


def _event_out(e: Event) -> dict:
    shown = ("url", "state", "attempts", "status_code", "last_error", "delivered_at")
    deliveries = [
        {**{f: getattr(d, f) for f in shown}, "next_at": d.next_at if d.state == d.PENDING else None}
        for d in e.deliveries.all()
    ]
    return {"kind": e.kind, "at": e.at, "value": e.value, "text": e.text, "deliveries": deliveries}


def alert_out(a: Alert) -> dict:
    return {
        "id": a.pk,
        "rule": a.rule.name,
        "rule_id": a.rule_id,
        "condition": a.rule.condition,
        "state": a.state,
        "subject": a.subject,
        "tape": a.tape.key if a.tape else None,
        "label": a.label,
        "value": a.value,
        "text": a.text,
        "fired_at": a.fired_at,
        "cleared_at": a.cleared_at,
        "history": [_event_out(e) for e in listing.history(a)],
    }


@router.get("/alerts", response=responses({200: AlertPageOut}, 400))
def list_alerts(request: HttpRequest, filters: Query[AlertFilters]) -> dict:
    """Alerts, firing ones first (newest first), then cleared ones, each with its history."""
    start = decode(filters.cursor, {"offset": int})["offset"] if filters.cursor else 0
    if start < 0:
        raise HttpError(400, "this cursor is not one of this list's")
    page = list(listing.alerts(filters.state)[start : start + filters.limit + 1])
    more = len(page) > filters.limit
    return {
        "items": [alert_out(a) for a in page[: filters.limit]],
        "next_cursor": encode({"offset": start + filters.limit}) if more else None,
    }


@router.get("/alerts/rules", response=responses({200: RuleListOut}))
def list_alert_rules(request: HttpRequest) -> dict:
    """Every alert rule, by name."""
    return {"items": list(Rule.objects.all())}


def _saved(rule: Rule | None, body: RuleIn, actor: Actor) -> Rule:
    try:
        return rules.save(rule, rules.RuleInput(**body.dict()), actor)
    except rules.RuleRefused as exc:
        raise HttpError(400, str(exc)) from None


@router.post("/alerts/rules", response=responses({201: RuleOut}, 400, 403))
def create_alert_rule(request: HttpRequest, body: RuleIn) -> Status:
    """Add a rule; the indexer evaluates it at its next pass."""
    return Status(201, _saved(None, body, admin(request)))


@router.put("/alerts/rules/{rule_id}", response=responses({200: RuleOut}, 400, 403, 404))
def update_alert_rule(request: HttpRequest, rule_id: int, body: RuleIn) -> Rule:
    """Change a rule (all its fields); its alerts stay, and are evaluated again over its scope."""
    actor = admin(request)
    return _saved(get_object_or_404(Rule, pk=rule_id), body, actor)


@router.delete("/alerts/rules/{rule_id}", response=responses({204: None}, 403, 404))
def delete_alert_rule(request: HttpRequest, rule_id: int) -> Status:
    """Remove a rule with its alerts and their history."""
    actor = admin(request)
    rules.delete(get_object_or_404(Rule, pk=rule_id), actor)
    return Status(204, None)
