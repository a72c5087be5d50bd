"""Alert rules (set by admins, not derived), and what they found: alerts, their history, deliveries."""

from __future__ import annotations

from django.db import models

from tapeview.tapes.models import Tape


class Rule(models.Model):
    """A condition over the tapes of a scope; `threshold` and `minutes` mean what `condition` says."""

    ERRORS, BUDGET, SILENT, COST = "errors", "budget", "silent", "cost"
    CONDITIONS = [
        (ERRORS, "errors in the last N minutes ≥ K"),
        (BUDGET, "context over its budget threshold"),
        (SILENT, "agent silent N minutes mid-turn"),
        (COST, "cost per day over a limit (USD)"),
    ]
    SCOPES = [("", "all tapes"), ("kind", "kind"), ("host", "host"), ("source", "source")]

    name = models.CharField(max_length=100, unique=True)
    condition = models.CharField(max_length=10, choices=CONDITIONS)
    # errors: K entries; budget: the share of the window (null: TAPEVIEW_BUDGET_WARN); cost: USD a day.
    threshold = models.FloatField(null=True, blank=True)
    minutes = models.IntegerField(null=True, blank=True)  # errors: the window; silent: how long
    scope = models.CharField(max_length=10, choices=SCOPES, blank=True, default="")
    scope_value = models.CharField(max_length=255, blank=True, default="")
    webhook = models.URLField(max_length=1000, blank=True, default="")  # "": TAPEVIEW_ALERT_WEBHOOK
    enabled = models.BooleanField(default=True)
    # null: new or changed since the indexer last looked over its whole scope (evaluate.run does).
    evaluated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def tapes(self) -> models.QuerySet[Tape]:
        """The tapes of its scope (archives never change: no alert is about them)."""
        tapes = Tape.objects.exclude(role="archive")
        return tapes.filter(**{self.scope: self.scope_value}) if self.scope else tapes

    @property
    def scope_text(self) -> str:
        return f"{self.scope} {self.scope_value}" if self.scope else "all tapes"


class Alert(models.Model):
    """What one rule says of one subject (a tape, or a cost rule's whole scope): firing or cleared.

    One row per (rule, subject): it fires once, and fires again only after it has cleared."""

    FIRING, CLEARED = "firing", "cleared"
    STATES = [(FIRING, FIRING), (CLEARED, CLEARED)]

    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="alerts")
    subject = models.CharField(max_length=64)  # the tape's key, or "scope"
    tape = models.ForeignKey(Tape, null=True, on_delete=models.SET_NULL, related_name="+")
    label = models.CharField(max_length=500)  # what the subject was called (its tape may go)
    state = models.CharField(max_length=10, choices=STATES)
    value = models.FloatField(null=True)  # what was measured when it last changed state
    text = models.CharField(max_length=500)
    fired_at = models.DateTimeField()
    cleared_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rule", "subject"], name="alert_rule_subject")]
        indexes = [models.Index(fields=["state", "fired_at"])]


class Event(models.Model):
    """One step of an alert's history: it fired, or it cleared."""

    FIRED, CLEARED = "fired", "cleared"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=10)
    at = models.DateTimeField()
    value = models.FloatField(null=True)
    text = models.CharField(max_length=500)

    class Meta:
        ordering = ["-at", "-pk"]


class Delivery(models.Model):
    """An event sent to a webhook: tried again with backoff until it is taken or given up."""

    PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"

    event = models.ForeignKey(Event, on_delete=models.CASCADE, related_name="deliveries")
    url = models.CharField(max_length=1000)
    body = models.JSONField()
    state = models.CharField(max_length=10, default=PENDING)
    attempts = models.IntegerField(default=0)
    next_at = models.DateTimeField()  # when to try (again)
    last_error = models.CharField(max_length=500, blank=True, default="")
    status_code = models.IntegerField(null=True)  # the webhook's last answer (null: none)
    delivered_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [models.Index(fields=["state", "next_at"])]


class DailyCost(models.Model):
    """A tape's cost as the evaluator saw it over one UTC day: `opening` when the day began (as far
    as it knows), `latest` now. A day's spend is latest - opening, summed over the scope."""

    tape = models.ForeignKey(Tape, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    opening = models.FloatField()
    latest = models.FloatField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tape", "day"], name="dailycost_tape_day")]


class Checkpoint(models.Model):
    """How far a host's indexer has evaluated: tapes indexed after `indexed_at` are evaluated next."""

    host = models.CharField(max_length=255, unique=True)
    indexed_at = models.DateTimeField(null=True)
    checked_at = models.DateTimeField(null=True)  # the last periodic check
