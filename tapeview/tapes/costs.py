"""What sessions cost in USD: the tokens each model used, kept per tape and per phase while a tape is
indexed, priced by the table (tapes.prices), unless the agent reported its own cost, which wins.

A tape's cost is a column (`Tape.cost`, with `cost_source` "reported" or "priced"), so the session
index sorts and filters by it in SQL. It is priced from `Tape.model_usage` (model -> prompt,
completion, cached tokens and calls) whenever the tape is saved by its indexer; a tape priced with
another table (its `priced_with` digest) is priced again by `reprice`, which the commands run as they
start and the prices page runs when it finds the table changed. A phase's cost is priced at every
read from its `PhaseUsage` rows, so it never needs redoing.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection, transaction

from tapeview.sources import Entry
from tapeview.sources.bub_next_lines import FORMAT as NEXT_FORMAT

from . import prices
from .models import PhaseUsage, Tape, db_text

REPORTED, PRICED = "reported", "priced"
_PENDING = "_phase_usage_pending"  # the tape instance's usage per (phase, model) not yet written


@dataclass
class Cost:
    """A figure and where it came from; `usd` None: unknown (a model the table does not price)."""

    usd: float | None
    source: str = ""  # REPORTED, PRICED, or "" with no cost
    unpriced: tuple[str, ...] = ()  # the models that made it unknown


def begin(tape: Tape) -> None:
    """An indexing run starts: usage another run gathered and did not write is not this one's."""
    tape.__dict__.pop(_PENDING, None)


def _pending(tape: Tape, phase: object, model: str) -> list:
    rows = tape.__dict__.setdefault(_PENDING, {})
    key = (getattr(phase, "phase_index", None) or 0, model)
    row = rows.get(key)
    if row is None:
        row = rows[key] = [0, 0, 0, 0, None]
    return row


def _model(tape: Tape) -> str:
    """The model the tape names now, as a key PostgreSQL's jsonb takes (no U+0000)."""
    return db_text(tape.model or "")


def add(tape: Tape, phase: object, prompt: int, completion: int, cached: int, calls: int = 1) -> None:
    """Model calls' tokens, of the model the tape names now (the one the call's own event named)."""
    model = _model(tape)
    usage = getattr(tape, "model_usage", None)
    usage = usage if isinstance(usage, dict) else {}
    total = usage.get(model) or [0, 0, 0, 0]
    usage[model] = [total[0] + prompt, total[1] + completion, total[2] + cached, total[3] + calls]
    tape.model_usage = usage
    row = _pending(tape, phase, model)
    row[0] += prompt
    row[1] += completion
    row[2] += cached
    row[3] += calls


def report(tape: Tape, phase: object, usd: object) -> None:
    """A cost the agent wrote itself for a model call (Bub-next's step `metrics.cost`)."""
    if type(usd) not in (int, float) or usd < 0 or (type(usd) is float and not math.isfinite(usd)):
        return  # (an int is finite, however long: math.isfinite would overflow on 10**400)
    tape.reported_cost = (getattr(tape, "reported_cost", None) or 0.0) + usd
    row = _pending(tape, phase, _model(tape))
    row[4] = (row[4] or 0.0) + usd


def count(tape: Tape, phase: object, e: Entry) -> None:
    """An entry read by the full path (tapes.index._account): its call's usage, its reported cost."""
    if e.kind == "metadata" or not e.readable:
        return  # nanobot's metadata usage is its last turn's, a snapshot: no calls to price
    if e.reports_usage and (e.prompt_tokens is not None or e.tokens):
        prompt = e.prompt_tokens or 0
        add(tape, phase, prompt, max(0, e.tokens - prompt), e.cached_tokens or 0)
    if e.kind in ("message", "tool_call") and e.meta.get("format") == NEXT_FORMAT:
        metrics = e.payload.get("metrics") if isinstance(e.payload, dict) else None
        if isinstance(metrics, dict) and "cost" in metrics:
            report(tape, phase, metrics["cost"])


def priced(usage: dict, table: prices.Table) -> Cost:
    """Model -> [prompt, completion, cached, ...] priced: unknown if any model with tokens has no price."""
    total, unpriced = 0.0, []
    for model, row in usage.items():
        prompt, completion, cached = (int(n) for n in row[:3])
        if not (prompt or completion):
            continue
        price = table.find(model) if model else None
        if price is None:
            unpriced.append(model or "(model not named)")
            continue
        total += price.cost(prompt, completion, cached)
    if unpriced:
        return Cost(None, "", tuple(unpriced))
    return Cost(total, PRICED) if usage and any(r[0] or r[1] for r in usage.values()) else Cost(None)


def of_tape(tape: Tape, table: prices.Table) -> Cost:
    if tape.reported_cost is not None:
        return Cost(tape.reported_cost, REPORTED)
    return priced(tape.model_usage or {}, table)


def settle(tape: Tape) -> None:
    """The tape's cost columns from what is counted so far, before its indexer saves it."""
    table = prices.current()
    cost = of_tape(tape, table)
    tape.cost, tape.priced_with = cost.usd, table.digest
    tape.cost_source = cost.source if cost.usd is not None else ""


def write(tape: Tape) -> None:
    """The usage per phase and model gathered since the last write, added to its rows (in the
    batch's transaction, after the tape's row: only its indexer writes them)."""
    rows = tape.__dict__.pop(_PENDING, None)
    if not rows:
        return
    quote = connection.ops.quote_name
    table = quote(PhaseUsage._meta.db_table)
    cols = ("tape_id", "phase_index", "model", "prompt_tokens", "completion_tokens", "cached_tokens", "calls")
    sums = ", ".join(f"{quote(c)} = {table}.{quote(c)} + excluded.{quote(c)}" for c in cols[3:])
    rc = quote("reported_cost")
    names = ", ".join(quote(c) for c in cols)
    statement = (
        f"INSERT INTO {table} ({names}, {rc}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        f" ON CONFLICT ({quote('tape_id')}, {quote('phase_index')}, {quote('model')}) DO UPDATE SET {sums},"
        f" {rc} = CASE WHEN excluded.{rc} IS NULL THEN {table}.{rc}"
        f" ELSE COALESCE({table}.{rc}, 0) + excluded.{rc} END"
    )
    values = [(tape.pk, phase, model[:200], *row) for (phase, model), row in rows.items()]
    with connection.cursor() as cursor:
        cursor.executemany(statement, values)


def reprice() -> int:
    """Price again every tape priced with another table than the current one; how many changed.

    Only a priced figure moves: a reported cost stays the agent's. One UPDATE per tape whose cost
    changes and one for the digest of all, in one transaction; a tape being indexed meanwhile
    settles with the new table itself."""
    table = prices.current()
    stale = Tape.objects.exclude(priced_with=table.digest).exclude(priced_with="")
    counted = stale.filter(reported_cost__isnull=True).exclude(model_usage={})
    changed = 0
    with transaction.atomic():
        for pk, usage, cost, source in counted.values_list("pk", "model_usage", "cost", "cost_source"):
            new = priced(usage or {}, table)
            new_source = new.source if new.usd is not None else ""
            if (new.usd, new_source) != (cost, source):
                Tape.objects.filter(pk=pk).update(cost=new.usd, cost_source=new_source)
                changed += 1
        stale.update(priced_with=table.digest)
    return changed


def of_phases(tape: Tape, indexes: Iterable[int]) -> dict[int, Cost]:
    """The cost of each of these phases of the tape (by phase_index): one query."""
    table = prices.current()
    usage: dict[int, dict[str, list]] = defaultdict(dict)
    reported: dict[int, float] = {}
    rows = PhaseUsage.objects.filter(tape=tape, phase_index__in=list(indexes)).values_list(
        "phase_index", "model", "prompt_tokens", "completion_tokens", "cached_tokens", "reported_cost"
    )
    for index, model, prompt, completion, cached, rep in rows:
        usage[index][model] = [prompt, completion, cached]
        if rep is not None:
            reported[index] = reported.get(index, 0.0) + rep
    out = {}
    for index, models in usage.items():
        out[index] = Cost(reported[index], REPORTED) if index in reported else priced(models, table)
    return out


def models_of(tape: Tape, table: prices.Table) -> list[dict]:
    """The tape's models with their tokens and what each cost, for its page."""
    out = []
    for model, row in sorted((tape.model_usage or {}).items()):
        prompt, completion, cached, calls = (list(row) + [0, 0, 0, 0])[:4]
        price = table.find(model) if model else None
        cost = price.cost(prompt, completion, cached) if price else None
        out.append({"model": model, "prompt": prompt, "completion": completion, "cached": cached,
                    "calls": calls, "price": price, "cost": cost})  # fmt: skip
    return out
