"""Alert rules made, changed and removed: one set of checks for the page's form and the API, audited."""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.db import transaction

from tapeview.accounts.audit import Actor, record

from .models import Rule

MAX_MINUTES = 7 * 24 * 60
FIELDS = ("name", "condition", "threshold", "minutes", "scope", "scope_value", "webhook", "enabled")


class RuleRefused(ValueError):
    """A rule that cannot be kept as given; `field` names the input at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


@dataclass
class RuleInput:
    name: str
    condition: str
    threshold: float | None = None
    minutes: int | None = None
    scope: str = ""
    scope_value: str = ""
    webhook: str = ""
    enabled: bool = True


def check(data: RuleInput) -> None:
    """Raise RuleRefused for the first thing wrong with the rule, said for the person who wrote it."""
    if not data.name.strip():
        raise RuleRefused("name", "a rule needs a name")
    if data.condition not in dict(Rule.CONDITIONS):
        known = ", ".join(dict(Rule.CONDITIONS))
        raise RuleRefused("condition", f"unknown condition {data.condition!r} (known: {known})")
    needs_minutes = data.condition in (Rule.ERRORS, Rule.SILENT)
    if needs_minutes and data.minutes is None:
        raise RuleRefused("minutes", f"the {data.condition} rule needs minutes (N)")
    if not needs_minutes and data.minutes is not None:
        raise RuleRefused("minutes", f"the {data.condition} rule takes no minutes")
    if data.minutes is not None and not 1 <= data.minutes <= MAX_MINUTES:
        raise RuleRefused("minutes", f"minutes must be from 1 to {MAX_MINUTES}")
    _check_threshold(data)
    scopes = dict(Rule.SCOPES)
    if data.scope not in scopes:
        raise RuleRefused("scope", f"unknown scope {data.scope!r} (known: kind, host, source, or none)")
    if data.scope and not data.scope_value.strip():
        raise RuleRefused("scope_value", f"name the {data.scope} the rule is about")
    if not data.scope and data.scope_value:
        raise RuleRefused("scope_value", "choose a scope (kind, host or source) for this value")
    if data.webhook:
        parts = urlsplit(data.webhook)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise RuleRefused("webhook", "the webhook must be an http:// or https:// URL")


def _check_threshold(data: RuleInput) -> None:
    value = data.threshold
    if value is not None and not math.isfinite(value):
        raise RuleRefused("threshold", "the threshold must be a finite number")
    if data.condition == Rule.ERRORS:
        if value is None or value < 1 or value != int(value):
            raise RuleRefused("threshold", "the errors rule needs a whole number of errors (K) of at least 1")
    elif data.condition == Rule.BUDGET:
        if value is not None and not 0.01 <= value <= 10:
            raise RuleRefused("threshold", "the budget threshold is a share of the window, from 0.01 to 10")
    elif data.condition == Rule.COST:
        if value is None or not 0 < value < 1e9:
            raise RuleRefused("threshold", "the cost rule needs a limit in USD per day, above 0")
    elif value is not None:
        raise RuleRefused("threshold", "the silent rule takes no threshold")


def save(rule: Rule | None, data: RuleInput, actor: Actor) -> Rule:
    """Make a rule (rule None) or change one; an edited rule looks over its whole scope again."""
    check(data)
    data.name = data.name.strip()
    data.scope_value = data.scope_value.strip()
    if Rule.objects.filter(name=data.name).exclude(pk=rule.pk if rule else None).exists():
        raise RuleRefused("name", f"a rule named {data.name!r} exists already")
    before = _shown(rule) if rule else None
    rule = rule or Rule()
    for field in FIELDS:
        setattr(rule, field, getattr(data, field))
    rule.evaluated_at = None
    with transaction.atomic():
        rule.save()
        action = "alert_rule.change" if before else "alert_rule.create"
        detail = {"before": before, "after": _shown(rule)} if before else {"after": _shown(rule)}
        record(actor, action, subject=f"alert_rule:{rule.pk}", target=rule.name, detail=detail)
    return rule


def delete(rule: Rule, actor: Actor) -> None:
    with transaction.atomic():
        detail = {"before": _shown(rule)}
        record(actor, "alert_rule.delete", subject=f"alert_rule:{rule.pk}", target=rule.name, detail=detail)
        rule.delete()


def _shown(rule: Rule) -> dict:
    return {f: getattr(rule, f) for f in FIELDS}
