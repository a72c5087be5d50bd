"""Costs as the pages add them up: a turn's from the entries shown, a source's and a day's from the
tapes' cost column (tapes.costs), in SQL."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, timedelta

from django.db.models import Count, F, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from tapeview.sources import Entry
from tapeview.sources.bub_next_lines import FORMAT as NEXT_FORMAT

from . import costs, discovery, prices
from .models import Tape

# Events that name the model of the calls after them (Bub's run names its own call's).
MODEL_NAMING = ("run", "loop.start", "model_switch", "model.started")
# A session's own calls: a sidecar's are calls too; a backup or a fork copy repeats its tape's.
SPENDING_ROLES = ("tape", "sidecar")
DAYS = 14


def _model_named(e: Entry) -> str:
    if e.kind == "event" and e.name in MODEL_NAMING and isinstance(e.payload, dict):
        data = e.payload.get("data")
        model = data.get("model") if isinstance(data, dict) else None
        return model if isinstance(model, str) else ""
    if e.kind in ("message", "tool_call") and e.meta.get("format") == NEXT_FORMAT:
        model = e.meta.get("model_name")
        return model if isinstance(model, str) else ""
    return ""


def of_entries(entries: Iterable[Entry], tape: Tape, table: prices.Table | None = None) -> costs.Cost | None:
    """What the model calls among these entries cost (a turn's, on its page); None where they hold none.

    A call is priced at the model named last before it in these entries (the tape's only model where
    none is named before it); reported costs (Bub-next's step metrics) win, as for the tape."""
    table = table or prices.current()
    usage = tape.model_usage or {}
    model = next(iter(usage)) if len(usage) == 1 else ""
    calls: dict[str, list[int]] = {}
    reported = None
    for e in entries:
        if not e.readable:
            continue
        model = _model_named(e) or model
        if e.kind != "metadata" and e.reports_usage and (e.prompt_tokens is not None or e.tokens):
            prompt = e.prompt_tokens or 0
            row = calls.setdefault(model, [0, 0, 0])
            row[0] += prompt
            row[1] += max(0, e.tokens - prompt)
            row[2] += e.cached_tokens or 0
        metrics = e.payload.get("metrics") if isinstance(e.payload, dict) else None
        if e.meta.get("format") == NEXT_FORMAT and isinstance(metrics, dict):
            spent = metrics.get("cost")
            if type(spent) in (int, float) and spent >= 0:
                reported = (reported or 0.0) + spent
    if reported is not None:
        return costs.Cost(reported, costs.REPORTED)
    if not calls:
        return None
    return costs.priced(calls, table)


@dataclass(frozen=True)
class Total:
    """Costs added up over tapes: the known figure, how many tapes it adds, and how many used tokens
    whose cost is unknown (so the figure leaves them out)."""

    label: str | date
    usd: float | None  # None: no tape of them has a known cost
    priced: int
    reported: int
    unknown: int


def _sums(rows) -> list[Total]:
    return [
        Total(
            r["grouped"],
            r["usd"] if r["priced"] or r["reported"] else None,
            r["priced"],
            r["reported"],
            r["unknown"],
        )
        for r in rows
        if r["priced"] or r["reported"] or r["unknown"]
    ]


def _annotated(found):
    return found.annotate(
        usd=Sum("cost"),
        priced=Count("id", filter=Q(cost_source=costs.PRICED, cost__isnull=False)),
        reported=Count("id", filter=Q(cost_source=costs.REPORTED, cost__isnull=False)),
        unknown=Count("id", filter=Q(cost__isnull=True, tokens__isnull=False)),
    )


def by_source() -> list[Total]:
    """Per source of this host, what its sessions cost."""
    found = Tape.objects.filter(host=discovery.this_host(), role__in=SPENDING_ROLES)
    return _sums(_annotated(found.values(grouped=F("source")).order_by("source")))


def by_day(days: int = DAYS) -> list[Total]:
    """Per day (UTC) of the last `days`, what the sessions last active that day cost, newest first."""
    since = timezone.now() - timedelta(days=days)
    found = Tape.objects.filter(host=discovery.this_host(), role__in=SPENDING_ROLES, last_at__gte=since)
    day = TruncDate("last_at", tzinfo=UTC)
    return _sums(_annotated(found.annotate(grouped=day).values("grouped").order_by("-grouped")))
