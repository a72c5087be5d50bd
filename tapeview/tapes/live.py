"""The live end of a tape's last timeline page: the page follows the agent's appends (a reader at
its end watches them arrive) until it holds LIVE_PAGE_SIZE entries, then says how many newer entries
the next page holds, and so does its pager. Its labels stay true: the range is what the page shows,
and a page open for hours stays bounded."""

from __future__ import annotations

from dataclasses import dataclass

from django import forms

from . import timeline
from .forms import TimelineForm
from .rows import Rows

# A live page drawn with a page of entries (timeline.PAGE_SIZE) follows the agent for as many again.
LIVE_PAGE_SIZE = 2 * timeline.PAGE_SIZE


class TailForm(TimelineForm):
    # The first entry the reader's page shows: how many it holds already, and its pager's start.
    first = forms.IntegerField(required=False, min_value=1)
    # It shows the error steps: their "only errors (N)" is counted again with the header.
    steps = forms.BooleanField(required=False)


@dataclass(frozen=True)
class Pager:
    """The pager of a live page that filled up: its range and the ways on (`items`: one is drawn)."""

    first_pos: int
    last_pos: int
    has_older: bool
    has_newer: bool = True
    items: bool = True


def room(first: int | None, after: int, index: Rows, size: int = LIVE_PAGE_SIZE) -> int:
    """How many more entries a live page takes: it holds `size` from its first (`first`) on, and
    shows those up to `after`. A page with no entries yet takes them all."""
    if first is None or after < first:
        return size
    return max(size - index.after(first - 1).before(after + 1).count(), 0)


def newer(after: int, index: Rows) -> int:
    """The entries past a full page's last (`after`), counted from the chunks' tallies."""
    return index.after(after).count()


def pager(first: int, last: int, index: Rows) -> Pager:
    """The pager of a full live page from `first` to `last`, with newer entries after it."""
    return Pager(first, last, index.before(first).exists())


@dataclass
class Fit:
    """What a reader's live page takes of the entries appended after it."""

    page: timeline.Page  # the entries it takes (all of them while it has room)
    first: int | None  # the page's first entry now
    newer: int  # once it is full, the entries past it, which the next page shows (0: it follows on)
    pager: Pager | None  # a full page's pager, with its way to the newer entries


def fit(tape, appended: timeline.Page, first: int | None, after: int) -> Fit:
    """Of `appended` (the page after `after`), what the reader's page from `first` takes."""
    index = appended.index
    space = room(first, after, index)
    page = appended
    if len(appended.items) > space:
        page = timeline.page(tape, after=after, size=space) if space else _nothing(index)
    first = first if first is not None and first <= after else page.first_pos
    last = page.last_pos or after
    full = len(page.items) >= space
    if full:
        page.tail = None  # an unfinished line is the next page's
    count = newer(last, index) if full and first is not None else 0
    return Fit(page, first, count, pager(first, last, index) if count else None)


def _nothing(index: Rows) -> timeline.Page:
    return timeline.Page([], None, None, False, True, None, index=index)
