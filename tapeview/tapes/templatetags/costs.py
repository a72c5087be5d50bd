"""`{% load costs %}`: what sessions, phases and turns cost, as the pages say it (tapes.costs)."""

from __future__ import annotations

from typing import Any

from django import template

from tapeview.tapes import costs, prices, spending, usage

register = template.Library()


@register.filter
def cost_note(tape: Any) -> str:
    """What the tape's cost is, or why it is unknown."""
    table = prices.current()
    cost = costs.of_tape(tape, table)
    if cost.source == costs.REPORTED:
        return f"reported by {tape.kind} (its own figure, at its own rates)"
    if cost.source == costs.PRICED:
        return f"priced from the tokens of each model, at the prices of {table.taken}"
    if cost.unpriced:
        return "unknown: no price for " + ", ".join(cost.unpriced)
    return usage.tape_note(tape.kind) or "unknown: no model calls with usage recorded"


@register.filter
def usd_or_dash(cost: costs.Cost | None) -> str:
    return "–" if cost is None or cost.usd is None else usage.cost_text(cost.usd)


@register.simple_tag(takes_context=True)
def turn_cost(context: template.Context, block: Any) -> costs.Cost | None:
    """The cost of the model calls of a turn as this page shows it."""
    tape = context.get("tape")
    if tape is None or block is None:
        return None
    return spending.of_entries(_entries(block), tape)


def _entries(block: Any):
    if getattr(block, "item", None) is not None:
        yield block.item.entry
    for part in getattr(block, "parts", ()):
        yield from _entries(part)


@register.inclusion_tag("tapes/_costs_summary.html")
def costs_summary() -> dict:
    table = prices.current()
    return {"by_source": spending.by_source(), "by_day": spending.by_day(), "table": table}
