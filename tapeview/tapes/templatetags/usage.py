"""What a tape's family records of its token usage, as the tape pages say it (tapes.usage)."""

from __future__ import annotations

from typing import Any

from django import template

from tapeview.tapes import usage

register = template.Library()


@register.filter
def usage_note(tape: Any) -> str:
    return usage.tape_note(getattr(tape, "kind", ""), _totals(tape))


def _totals(tape: Any) -> bool:
    return getattr(tape, "tokens", None) is not None


@register.filter
def tokens_figure(tape: Any) -> str:
    """What the tape's token figure is when it is not its total (nanobot's "last turn"), else ""."""
    return usage.figure(getattr(tape, "kind", ""))


@register.simple_tag
def tokens_column_note() -> str:
    return usage.column_note()


@register.filter
def session_totals(tape: Any) -> bool:
    """Whether the tape's tokens are the session totals its family keeps beside it (araliya)."""
    return _totals(tape) and getattr(tape, "kind", "") in usage.SESSION_TOTALS


@register.filter
def tokens_unrecorded(tape: Any) -> str:
    """ "not recorded by <family>" for a family that records no token usage, else ""."""
    return usage.unrecorded(getattr(tape, "kind", ""), _totals(tape))


@register.filter
def usd(cost: float | None) -> str:
    return "–" if cost is None else usage.cost_text(cost)
