"""What each kind of rule measures, read from the index (and the budget's cache): a Reading per subject."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.db.models import F, Sum

from tapeview.tapes import budget, rows, turn_state
from tapeview.tapes.models import Tape

from .models import DailyCost, Rule


@dataclass(frozen=True)
class Reading:
    firing: bool
    value: float | None
    text: str


def of_tape(rule: Rule, tape: Tape, now: datetime) -> Reading:
    """What a per-tape rule says of one tape now."""
    if rule.condition == Rule.ERRORS:
        return errors(rule, tape, now)
    if rule.condition == Rule.BUDGET:
        return context(rule, tape)
    return silent(rule, tape, now)


def errors(rule: Rule, tape: Tape, now: datetime) -> Reading:
    minutes, least = rule.minutes or 0, int(rule.threshold or 1)
    found = rows.of(tape).where(errors=True, since=now - timedelta(minutes=minutes)).count()
    return Reading(
        found >= least,
        found,
        f"{tape.label}: {found} error{'' if found == 1 else 's'} in the last {minutes} min (≥ {least})",
    )


def context(rule: Rule, tape: Tape) -> Reading:
    limit = rule.threshold or settings.TAPEVIEW_BUDGET_WARN
    # measure(): the agent's reported prompt, else the estimate, kept until the tape's index moves.
    ratio = budget.measure(tape).ratio
    if ratio is None:
        return Reading(False, None, f"{tape.label}: context window unknown")
    return Reading(
        ratio >= limit, round(ratio, 4), f"{tape.label}: context at {ratio:.0%} of its window (≥ {limit:.0%})"
    )


def last_heard(tape: Tape) -> datetime | None:
    """When the agent last wrote: its newest entry's date, or the file's change if later."""
    seen = [tape.last_at] if tape.last_at else []
    if tape.mtime_ns:
        seen.append(datetime.fromtimestamp(tape.mtime_ns / 1e9, UTC))
    return max(seen) if seen else None


def silent(rule: Rule, tape: Tape, now: datetime) -> Reading:
    minutes, heard = rule.minutes or 0, last_heard(tape)
    if heard is None:
        return Reading(False, None, f"{tape.label}: never heard from")
    quiet = (now - heard).total_seconds() / 60
    firing = quiet >= minutes and turn_state.mid_turn(tape)
    return Reading(
        firing, round(quiet, 1), f"{tape.label}: silent for {quiet:.0f} min mid-turn (≥ {minutes})"
    )


def day_of(now: datetime) -> date:
    return now.astimezone(UTC).date()


def note_cost(tape: Tape, now: datetime) -> None:
    """Keep the tape's cost for today. Its opening is where yesterday's ended; for a tape first seen
    today, 0 if its session began today, else its cost now (what it spent before is not known)."""
    if tape.cost is None:
        return
    day = day_of(now)
    row = DailyCost.objects.filter(tape=tape, day=day).first()
    if row is not None:
        if row.latest != tape.cost:
            DailyCost.objects.filter(pk=row.pk).update(latest=tape.cost)
        return
    before = DailyCost.objects.filter(tape=tape, day__lt=day).order_by("-day").first()
    if before is not None:
        opening = before.latest
    else:
        began_today = tape.first_at is not None and tape.first_at >= datetime.combine(day, time(), UTC)
        opening = 0.0 if began_today else tape.cost
    DailyCost.objects.get_or_create(tape=tape, day=day, defaults={"opening": opening, "latest": tape.cost})


def cost(rule: Rule, now: datetime) -> Reading:
    """The scope's spend today (UTC) against the rule's limit."""
    spent = (
        DailyCost.objects.filter(day=day_of(now), tape__in=rule.tapes()).aggregate(
            spent=Sum(F("latest") - F("opening"))
        )["spent"]
        or 0.0
    )
    limit = rule.threshold or 0.0
    return Reading(
        spent > limit, round(spent, 6), f"{rule.scope_text}: ${spent:.4f} spent today (limit ${limit:.2f})"
    )
