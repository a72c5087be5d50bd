"""Formatting for phases, lineage and the context budget."""

from __future__ import annotations

from django import template

from tapeview.tapes import budget
from tapeview.tapes.models import Tape

register = template.Library()


@register.filter
def share(value: float | None) -> str:
    """A ratio as a percentage: one decimal below 10 %, none above; "–" when unknown."""
    if value is None:
        return "–"
    return f"{value:.1%}" if value < 0.1 else f"{value:.0%}"


@register.filter
def seconds(value: float | None) -> str:
    """A duration: 0.4 s, 42 s, 3 min 5 s, 2 h 10 min, 34 d 0 h; "–" when unknown."""
    if value is None:
        return "–"
    if value < 10:
        return f"{value:.1f} s"
    whole = round(value)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    if whole < 86400:
        return f"{whole // 3600} h {whole % 3600 // 60} min"
    return f"{whole // 86400} d {whole % 86400 // 3600} h"


@register.filter
def stored_budget(tape: Tape) -> budget.Budget:
    """The budget the index knows for the session index's column (nothing is read from the file)."""
    return budget.stored(tape)
