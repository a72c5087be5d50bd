"""The session index's pictures over time and its figures: aggregate queries over the tapes' rows.

A session counts in the hour, day or month of its last activity (`Tape.last_at`), the column the
index's `since` and `until` filters narrow by, so a bar's figures are what its link lists. Nothing
here reads a file or an entry: every figure is a SUM, COUNT or one ordered row of the index.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db.models import Count, DurationField, ExpressionWrapper, F, Max, Min, Q, QuerySet, Sum
from django.db.models.functions import Trunc

from .models import Anchor, Tape, Turn

HOURS = 48  # a range up to this many hours is drawn by the hour
DAYS = 92  # up to this many days by the day; longer ones by the month, past MONTHS by the year
MONTHS = 120
BARS = 120  # the most bars drawn: a range longer than that many years (a date of the year 1 in a
# file) draws its last BARS years, and the sessions before them are counted, not drawn
MEASURES = ("entries", "errors", "tokens", "cost")


@dataclass(frozen=True)
class Bucket:
    start: datetime
    end: datetime  # exclusive
    sessions: int = 0
    entries: int = 0
    errors: int = 0
    tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True)
class Spread:
    """Middle and high percentiles of a duration, in seconds, over how many were known."""

    known: int
    p50: float | None
    p99: float | None


@dataclass(frozen=True)
class Overview:
    unit: str  # hour | day | month
    buckets: list[Bucket]
    undated: int  # sessions without a time: in no bar
    sessions: int
    entries: int
    errors: int
    with_errors: int  # sessions with at least one error
    tokens: int | None
    cost: float | None
    costed: int  # sessions that reported a cost
    session_length: Spread  # first to last entry
    phase_length: Spread  # each phase from its anchor to its last entry
    turn_length: Spread  # each turn with a known start and end (tapes.turn_tally)

    @property
    def error_rate(self) -> float | None:
        return self.errors / self.entries if self.entries else None


def overview(tapes: QuerySet[Tape]) -> Overview:
    """The figures of these sessions, and their bars by the hour, day or month their range asks."""
    tapes = tapes.order_by()
    totals = tapes.aggregate(
        n=Count("id"),
        n_entries=Sum("entries"),
        n_errors=Sum("errors"),
        n_with_errors=Count("id", filter=Q(errors__gt=0)),
        n_tokens=Sum("tokens"),
        n_cost=Sum("cost"),
        n_costed=Count("cost"),
        n_dated=Count("last_at"),
        first=Min("last_at"),
        last=Max("last_at"),
    )
    unit = _unit(totals["first"], totals["last"])
    return Overview(
        unit=unit,
        buckets=_buckets(tapes, unit, totals["first"], totals["last"]) if totals["n_dated"] else [],
        undated=totals["n"] - totals["n_dated"],
        sessions=totals["n"],
        entries=totals["n_entries"] or 0,
        errors=totals["n_errors"] or 0,
        with_errors=totals["n_with_errors"],
        tokens=totals["n_tokens"],
        cost=totals["n_cost"],
        costed=totals["n_costed"],
        session_length=_spread(
            tapes.filter(first_at__isnull=False, last_at__isnull=False), F("last_at") - F("first_at")
        ),
        phase_length=_spread(
            Anchor.objects.filter(
                tape__in=tapes.values("id"), phase=True, started_at__isnull=False, ended_at__isnull=False
            ),
            F("ended_at") - F("started_at"),
        ),
        turn_length=_spread(
            Turn.objects.filter(
                tape__in=tapes.values("id"), started_us__isnull=False, ended_us__isnull=False
            ),
            F("ended_us") - F("started_us"),  # microseconds: _spread reads a number as those
        ),
    )


def _unit(first: datetime | None, last: datetime | None) -> str:
    if first is None or last is None:
        return "day"
    span = last - first
    if span <= timedelta(hours=HOURS):
        return "hour"
    if span <= timedelta(days=DAYS):
        return "day"
    return "month" if (last.year - first.year) * 12 + last.month - first.month < MONTHS else "year"


def floor(moment: datetime, unit: str) -> datetime:
    moment = moment.astimezone(UTC)
    if unit == "hour":
        return moment.replace(minute=0, second=0, microsecond=0)
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if unit == "year":
        return day.replace(month=1, day=1)
    return day if unit == "day" else day.replace(day=1)


def step(start: datetime, unit: str) -> datetime:
    if unit == "hour":
        return start + timedelta(hours=1)
    if unit == "day":
        return start + timedelta(days=1)
    if unit == "year":
        return start.replace(year=start.year + 1)
    if start.month == 12:
        return start.replace(year=start.year + 1, month=1)
    return start.replace(month=start.month + 1)


def _buckets(tapes: QuerySet[Tape], unit: str, first: datetime, last: datetime) -> list[Bucket]:
    rows = (
        tapes.filter(last_at__isnull=False)
        .annotate(at=Trunc("last_at", unit, tzinfo=UTC))
        .values("at")
        .annotate(n=Count("id"), n_entries=Sum("entries"), n_errors=Sum("errors"))
        .annotate(n_tokens=Sum("tokens"), n_cost=Sum("cost"))
    )
    found = {floor(r["at"], unit): r for r in rows}
    out = []
    at = floor(first, unit)
    if unit == "year":
        at = max(at, floor(last, unit).replace(year=max(1, last.year - BARS + 1)))
    while at <= last and len(out) < BARS:
        r = found.get(at, {})
        try:
            end = step(at, unit)
        except (ValueError, OverflowError):  # the year 9999's: the last bar there is
            end = datetime.max.replace(tzinfo=UTC)
        figures = ("n", "n_entries", "n_errors", "n_tokens")
        out.append(Bucket(at, end, *(r.get(k) or 0 for k in figures), r.get("n_cost") or 0.0))
        if end.year == datetime.max.year and end == datetime.max.replace(tzinfo=UTC):
            break
        at = end
    return out


def _spread(rows: QuerySet, duration) -> Spread:
    """The 50th and 99th percentile (nearest rank) of `duration` over these rows: a count, then one
    row at each rank, ordered by the database."""
    length = ExpressionWrapper(duration, output_field=DurationField())
    ordered = rows.order_by().annotate(length=length).order_by("length").values_list("length", flat=True)
    known = rows.order_by().count()
    if not known:
        return Spread(0, None, None)

    def at(q: float) -> float | None:
        rank = min(known - 1, max(0, math.ceil(q * known) - 1))
        # The rows may have changed since they were counted (an agent's tape indexed meanwhile):
        # the nearest row at or before that rank, or none.
        found = list(ordered[max(0, rank - 1) : rank + 1])
        if not found:
            return None
        value = found[-1]
        return value.total_seconds() if isinstance(value, timedelta) else float(value or 0) / 1e6

    return Spread(known, at(0.50), at(0.99))


LINK_FORMAT = "%Y-%m-%dT%H:%M"  # as a datetime-local control holds it, in UTC (settings.TIME_ZONE)
