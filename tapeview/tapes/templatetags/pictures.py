"""The pictures of a tape (tapes.pictures) as template tags: `{% load pictures %}`."""

from __future__ import annotations

from django import template

from tapeview.tapes import pictures
from tapeview.tapes.models import Tape
from tapeview.tapes.rows import Rows

register = template.Library()


@register.inclusion_tag("tapes/_sparkline.html")
def tape_sparkline(tape: Tape) -> dict:
    """The tape's activity over its life, small enough for a cell of the session list."""
    return {"svg": pictures.sparkline(pictures.activity(tape))}


@register.inclusion_tag("tapes/_strip.html")
def tape_strip(tape: Tape, index: Rows | None = None) -> dict:
    """The whole tape as a bar with its anchors, errors and tool calls; each mark jumps there.
    `index`: the page's snapshot of the tape's rows (timeline.Page.index), for the marks' rows."""
    # Drawn once per state of the tape's index: hundreds of marks are many small strings.
    return {
        "svg": pictures.cached("strip-svg", tape, lambda: pictures.strip(pictures.marks(tape, index=index))),
        "tape": tape,
    }
