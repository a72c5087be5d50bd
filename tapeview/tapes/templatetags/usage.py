"""What a tape's family records of its token usage, as the tape pages say it (tapes.usage)."""

from __future__ import annotations

from typing import Any

from django import template

from tapeview.tapes import usage

register = template.Library()


@register.filter
def usage_note(tape: Any) -> str:
    return usage.tape_note(getattr(tape, "kind", ""))


@register.filter
def tokens_figure(tape: Any) -> str:
    """What the tape's token figure is when it is not its total (nanobot's "last turn"), else ""."""
    return usage.figure(getattr(tape, "kind", ""))


@register.simple_tag
def tokens_column_note() -> str:
    return usage.column_note()


@register.filter
def tokens_unrecorded(tape: Any) -> str:
    """ "not recorded by <family>" for a family that records no token usage, else ""."""
    return usage.unrecorded(getattr(tape, "kind", ""))
