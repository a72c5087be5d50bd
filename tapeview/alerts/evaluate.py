"""The indexer's alert pass: after each indexing tick, the rules over the tapes that changed; every
CHECK seconds, also over those that time alone can change (silent agents, alerts firing, a new day).

An alert fires once and stays firing until its rule no longer holds; the state moves by conditional
UPDATEs, so two passes (two hosts of a fleet) never fire it twice. Each move is an Event, and a
Delivery to the rule's webhook (or TAPEVIEW_ALERT_WEBHOOK), sent by the courier, never here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, close_old_connections, transaction
from django.db.models import Max
from django.utils import timezone

from tapeview.outage import Outage
from tapeview.tapes.models import Tape, this_host

from . import conditions, courier, payload
from .conditions import Reading
from .models import Alert, Checkpoint, DailyCost, Delivery, Event, Rule

log = logging.getLogger("tapeview.alerts")

CHECK = timedelta(seconds=30)  # between the checks of what time alone changes
# Tapes last heard from longer ago are not looked at by a new rule or for silence (an old store's
# abandoned turns are history, not alerts); those that changed are always evaluated.
LOOKBACK = timedelta(days=1)
KEEP_COSTS = timedelta(days=8)
SCOPE = "scope"  # the subject of a cost rule: its whole scope
EVERY = 1.0  # seconds between the watcher's evaluations at the least

_last = -EVERY
_outage = Outage(log, "evaluating alerts")


def indexer_idle(sender: object = None, budget: float | None = None, **_: object) -> None:
    """The indexer has read what it was told of: evaluate, then send (a failing webhook or rule is
    logged, and indexing goes on). At most every EVERY seconds: while the search pass is behind,
    the watcher's quiet moments come twenty times a second."""
    global _last
    if budget is not None and time.monotonic() - _last < EVERY:
        return
    _last = time.monotonic()
    try:
        run(timezone.now())
    except Exception as exc:
        _outage.failed(exc)  # (the watcher's own loop pauses while the database is away)
        close_old_connections()
    else:
        _outage.passed()
    courier.after_pass()


def run(now: datetime) -> None:
    host = this_host()
    point = Checkpoint.objects.get_or_create(host=host)[0]
    periodic = point.checked_at is None or now - point.checked_at >= CHECK
    mine = Tape.objects.filter(host=host, indexed_at__isnull=False).exclude(role="archive")
    if point.indexed_at is None:  # this host's first pass: what the agents wrote lately
        changed = list(mine.filter(last_at__gte=now - LOOKBACK))
        indexed_upto = mine.aggregate(upto=Max("indexed_at"))["upto"]
    else:
        changed = list(mine.filter(indexed_at__gt=point.indexed_at))
        indexed_upto = max((t.indexed_at for t in changed), default=None)
    for tape in changed:
        conditions.note_cost(tape, now)
    for rule in Rule.objects.filter(enabled=True):
        if rule.condition == Rule.COST:
            if changed or periodic or rule.evaluated_at is None:
                settle(rule, SCOPE, None, rule.scope_text, conditions.cost(rule, now), now)
        else:
            for tape in _looked_at(rule, changed, host, now, periodic):
                try:
                    reading = conditions.of_tape(rule, tape, now)
                except Exception as exc:  # the file gone or unreadable since: next time
                    log.warning(
                        "alert %s on %s not evaluated (%s: %s)", rule.name, tape.path, type(exc).__name__, exc
                    )
                    continue
                settle(rule, tape.key, tape, tape.label, reading, now)
        if rule.evaluated_at is None:
            Rule.objects.filter(pk=rule.pk, updated_at=rule.updated_at).update(evaluated_at=now)
    if periodic:
        point.checked_at = now
        DailyCost.objects.filter(day__lt=(now - KEEP_COSTS).date()).delete()
    if periodic or (indexed_upto and indexed_upto != point.indexed_at):  # no write at every tick
        point.indexed_at = indexed_upto or point.indexed_at
        point.save()


def _looked_at(rule: Rule, changed: list[Tape], host: str, now: datetime, periodic: bool) -> Iterable[Tape]:
    """The tapes whose reading may have moved: those that changed, and at a check those time moves."""
    tapes = {t.pk: t for t in changed if not rule.scope or getattr(t, rule.scope) == rule.scope_value}
    scope = rule.tapes().filter(host=host)
    if rule.evaluated_at is None:  # new or edited: its whole scope, as far as LOOKBACK
        tapes.update((t.pk, t) for t in scope.filter(last_at__gte=now - LOOKBACK))
    if periodic:
        firing = Alert.objects.filter(rule=rule, state=Alert.FIRING).values("tape")
        tapes.update((t.pk, t) for t in scope.filter(pk__in=firing))
        if rule.condition == Rule.SILENT:
            quiet = now - timedelta(minutes=rule.minutes or 0)
            candidates = scope.filter(
                kind="bub", role="tape", last_at__gte=now - LOOKBACK, last_at__lte=quiet
            )
            tapes.update((t.pk, t) for t in candidates)
    return tapes.values()


def settle(rule: Rule, subject: str, tape: Tape | None, label: str, reading: Reading, now: datetime) -> None:
    """Move the alert of (rule, subject) to what the reading says, once."""
    alert = Alert.objects.filter(rule=rule, subject=subject).first()
    moved = {"value": reading.value, "text": reading.text[:500]}
    with transaction.atomic():
        if reading.firing and alert is None:
            try:
                with transaction.atomic():
                    alert = Alert.objects.create(
                        rule=rule, subject=subject, tape=tape, label=label[:500], state=Alert.FIRING,
                        fired_at=now, **moved,
                    )  # fmt: skip
            except IntegrityError:  # another pass (another host) made it first
                return
        elif reading.firing and alert.state == Alert.CLEARED:
            fired = dict(state=Alert.FIRING, fired_at=now, cleared_at=None, **moved)
            if not Alert.objects.filter(pk=alert.pk, state=Alert.CLEARED).update(**fired):
                return
        elif not reading.firing and alert is not None and alert.state == Alert.FIRING:
            if not Alert.objects.filter(pk=alert.pk, state=Alert.FIRING).update(
                state=Alert.CLEARED, cleared_at=now, **moved
            ):
                return
        else:
            return
        alert.refresh_from_db()
        kind = Event.FIRED if reading.firing else Event.CLEARED
        event = Event.objects.create(alert=alert, kind=kind, at=now, **moved)
        url = rule.webhook or settings.TAPEVIEW_ALERT_WEBHOOK
        if url:
            # Sent on the wall clock, whatever time the pass was asked to judge by.
            first_try = timezone.now()
            Delivery.objects.create(event=event, url=url, body=payload.body(alert, event), next_at=first_try)
    log.info("alert %s %s: %s", rule.name, kind, reading.text)
