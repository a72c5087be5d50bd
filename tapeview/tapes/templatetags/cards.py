"""The timeline's entry cards, each drawn once for what it is drawn from: `{% load cards %}`."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import mark_safe

register = template.Library()

CARD_TEMPLATE = "tapes/_entry_card.html"


@register.simple_tag(takes_context=True)
def entry_html(context: template.Context, item: Any, entry: Any) -> str:
    """The card of one timeline entry (`tapes/_entry_card.html`, drawn with `item` and `entry`), taken
    from the cards drawn before (`cards` in the context: views.cards.Cards) when one was drawn from
    the same entry, pairs and place on the page. A tag, not an include: a page draws dozens."""
    cards = context.get("cards")
    key = cards.key(item) if cards is not None and item is not None else None
    if key is not None:
        found = cards.get(key)
        if found is not None:
            return mark_safe(found)
    with context.push(item=item, entry=entry):
        html = context.template.engine.get_template(CARD_TEMPLATE).render(context)
    if key is not None:
        cards.put(key, str(html))
    return mark_safe(html)
