"""The timeline's entry cards drawn once per state of the tape's index: `{% load cards %}`."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import mark_safe

register = template.Library()

CARD_TEMPLATE = "tapes/_entry_card.html"


@register.simple_tag(takes_context=True)
def entry_html(context: template.Context, item: Any, entry: Any) -> str:
    """The card of one timeline entry (`tapes/_entry_card.html`), taken from the page's cards drawn
    before (`cards` in the context: views.cards.Cards) when they hold one that looks the same."""
    cards = context.get("cards")
    card = _card_key(context, item, entry) if cards is not None and item is not None else None
    if card is not None:
        found = cards.get(card)
        if found is not None:
            return mark_safe(found)
    html = context.template.engine.get_template(CARD_TEMPLATE).render(context)
    if card is not None:
        cards.put(card, str(html))
    return mark_safe(html)


def _card_key(context: template.Context, item: Any, entry: Any) -> tuple:
    """What a card shows besides the tape's index (the page's cards are of one state of it): how its
    entry sits on this page, its calls and results paired, whether it is the entry jumped to."""
    pairs = tuple((p["call"] is None, p["result"] is None) for p in item.calls or item.results)
    return (
        entry.pos,
        item.folded,
        item.call_pos,
        item.result_pos,
        item.boundary,
        pairs,
        context.get("jump") == entry.pos,
        context.get("only") or "",
        (context.get("segment_ends") or {}).get(entry.pos),
    )
