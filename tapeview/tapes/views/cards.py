"""The entry cards of a timeline page as drawn before, each kept by what it is drawn from.

A card is the same HTML for as long as what it is drawn from is the same: its entry (parsed from
the entry's bytes), its tool calls paired with their results, how it sits on the page (where its
segment ends, whether it is the entry jumped to, the narrowing) and the page's links. The key of a
card is a digest of all of that, so an append, which leaves the entries before it alone, keeps
their cards, and a replaced file, whose entries read otherwise, never finds the old ones. Drawing
fifty cards is most of a page's time. What differs per reader (its reviews, a form's CSRF token)
is drawn beside the card, never in it.
"""

from __future__ import annotations

import hashlib
import pickle

from django.core.cache import cache

from ..blocks import Item
from ..models import Tape

CACHE_SECONDS = 600


class Cards:
    """The cards of one page's entries: the template tag `entry_html` asks (`get`) before it draws
    one, and hands it over (`put`) after; `keep` stores what this page drew.

    Kept together, one cache entry per place a page is asked for (`?at=`, `?end=1`, ...), by their
    keys: after an append the same place finds the cards of the entries still on it. `state` names
    the page as drawn from one state of the tape's index (views.timeline `_timeline`'s key): while
    it is the same, so is each card's key, and the keys kept with the cards are used as they are."""

    def __init__(
        self,
        tape: Tape,
        place: tuple,
        jump: int | None,
        only: str,
        segment_ends: dict,
        urls: dict,
        state: str | None = None,
    ) -> None:
        where = hashlib.blake2b(repr(place).encode(), digest_size=16).hexdigest()
        self.kept = f"tapeview:pictures:cards:{tape.pk}:{where}"
        kept = cache.get(self.kept) or {}
        self.drawn: dict[str, str] = kept.get("cards", {})
        self.state = state
        # A card's key by its entry's position, while the page is drawn from the same state.
        self.keys: dict[int, str] = kept.get("keys", {}) if state and kept.get("state") == state else {}
        self.shown: dict[str, str] = {}  # what this page draws: all that is kept of the place
        self.known = len(self.keys)
        self.page = (tape.pk, tape.key, only or "", sorted(urls.items()))
        self.jump, self.segment_ends = jump, segment_ends

    def key(self, item: Item) -> str | None:
        """A digest of everything the card of `item` is drawn from (pickled: equal pickles are equal
        inputs; inputs equal but pickled otherwise only miss); None for an entry nested too deeply
        to pickle, whose card is drawn every time."""
        entry = item.entry
        found = self.keys.get(entry.pos)
        if found is not None:
            return found
        drawn_from = (
            self.page,
            entry,
            item.calls,
            item.results,
            item.call_pos,
            item.result_pos,
            item.folded,
            item.boundary,
            self.jump == entry.pos,
            self.segment_ends.get(entry.pos),
        )
        try:
            drawn = pickle.dumps(drawn_from, protocol=5)
        except RecursionError:
            return None
        found = self.keys[entry.pos] = hashlib.blake2b(drawn, digest_size=20).hexdigest()
        return found

    def get(self, key: str) -> str | None:
        found = self.drawn.get(key)
        if found is not None:
            self.shown[key] = found
        return found

    def put(self, key: str, html: str) -> None:
        self.shown[key] = html

    def keep(self) -> None:
        """Keep this page's cards for its place, and only them (a card no longer drawn there goes)."""
        if self.shown.keys() != self.drawn.keys() or len(self.keys) != self.known:
            kept = {"cards": self.shown, "state": self.state, "keys": self.keys if self.state else {}}
            cache.set(self.kept, kept, CACHE_SECONDS)
            self.drawn, self.known = dict(self.shown), len(self.keys)
