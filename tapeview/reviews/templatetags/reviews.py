"""The reviews shown on a tape's timeline: the current ones of each entry, and the tape's summary."""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

from django import template
from django.http import HttpRequest

from tapeview.sources import Entry
from tapeview.tapes.models import Tape

from .. import ledger
from ..models import Review

register = template.Library()
BOX_TEMPLATE = "reviews/_entry_reviews.html"
TURN_TEMPLATE = "reviews/_turn_reviews.html"

# The current reviews of a tape by position, once per request: the timeline asks for each entry.
_boards: WeakKeyDictionary[HttpRequest, dict[str, dict[int, list[Review]]]] = WeakKeyDictionary()


def _entry_reviews(context: template.Context, tape: Tape | None, entry: Entry | None) -> list[Review] | None:
    """The current reviews of this entry, orphans marked; None for what cannot be reviewed.

    An unfinished last line is not indexed yet, and has no position to review.
    """
    if tape is None or entry is None or not 1 <= entry.pos < tape.next_pos:
        return None
    request = context.get("request")
    if request is None:
        board = ledger.current_by_pos(tape)
    else:
        boards = _boards.setdefault(request, {})
        if tape.key not in boards:
            boards[tape.key] = ledger.current_by_pos(tape)
        board = boards[tape.key]
    return ledger.mark(board.get(entry.pos, []))


@register.simple_tag(takes_context=True)
def entry_reviews_html(context: template.Context, tape: Tape | None, entry: Entry | None) -> str:
    """An entry's reviews on the timeline, and the form to add one for those who may write
    (`reviews/_entry_reviews.html`); nothing for an entry with neither. A tag, not an include: the
    timeline draws one for each of its dozens of entries, most of them with nothing to show."""
    shown = _entry_reviews(context, tape, entry)
    if shown is None or not (shown or context.get("can_write")):
        return ""
    with context.push(tape=tape, entry=entry, shown=shown):
        return context.template.engine.get_template(BOX_TEMPLATE).render(context)


@register.simple_tag(takes_context=True)
def turn_reviews_html(context: template.Context, tape: Tape, turn: Any, cursor: str = "") -> str:
    """A turn's reviews on the conversation page, and the form to review the turn for those who may
    write (`reviews/_turn_reviews.html`): a review of span "turn" from its first entry to its last."""
    if not 1 <= turn.first_pos <= turn.last_pos < tape.next_pos:
        return ""  # an unfinished last line is no entry yet: the turn is reviewed once it is
    entry = Entry(pos=turn.first_pos, offset=0, length=0, id=None, kind="message")
    shown = [r for r in _entry_reviews(context, tape, entry) or [] if r.span == "turn"]
    if not (shown or context.get("can_write")):
        return ""
    with context.push(tape=tape, turn=turn, shown=shown, cursor=cursor):
        return context.template.engine.get_template(TURN_TEMPLATE).render(context)


@register.simple_tag
def tape_reviews(tape: Tape) -> dict:
    return ledger.summary(tape.key)
