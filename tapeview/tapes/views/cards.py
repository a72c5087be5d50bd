"""The entry cards of a timeline page as drawn before: kept until the tape's index changes.

A card is the same HTML for as long as the tape's index is (its entry's bytes, its tool calls paired
with their results, where its segment ends); drawing fifty of them is most of a page's time. What
differs per reader (its reviews, a form's CSRF token) is drawn beside the card, never in it.
"""

from __future__ import annotations

from collections.abc import Hashable

from django.core.cache import cache

from .. import pictures
from ..models import Tape
from ..timeline import Page

CACHE_SECONDS = 600


class Cards:
    """The cards of one page's entries by what each looks like: the template tag `entry_html`
    asks (`get`) before it draws one, and hands it over (`put`) after; `keep` stores the new ones."""

    def __init__(self, tape: Tape, page: Page, only: str, timeline_url: str) -> None:
        where = (page.first_pos, page.last_pos, only, timeline_url)
        self.key = pictures.state_key("cards", tape, where) if page.items else None
        self.drawn: dict[Hashable, str] = (cache.get(self.key) or {}) if self.key else {}
        self.added = False

    def get(self, card: Hashable) -> str | None:
        return self.drawn.get(card) if self.key else None

    def put(self, card: Hashable, html: str) -> None:
        if self.key:
            self.drawn[card] = html
            self.added = True

    def keep(self) -> None:
        if self.added:
            cache.set(self.key, self.drawn, CACHE_SECONDS)
            self.added = False
