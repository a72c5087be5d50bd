"""The search API: every entry of every tape, every item of every memory store."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from django.conf import settings
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from tapeview.tapes import discovery, expression
from tapeview.tapes.api.cursor import decode, encode
from tapeview.tapes.api.schemas import TEXT, PageIn, responses

from . import catchup, engine
from .entries import SEARCHABLE

COUNT_SECONDS = f"{settings.TAPEVIEW_SEARCH_COUNT_SECONDS:g}"
HIGHLIGHTS = "where the matches are in `snippet`: [start, end) offsets in characters (code points)"


class HitOut(Schema):
    tape_id: str
    tape_label: str
    host: str = Field(description="the host the tape is on (TAPEVIEW_HOST of the indexer that found it)")
    source: str
    pos: int = Field(description="the entry: GET /api/tapes/{tape_id}/entries/{pos}")
    kind: str
    role: str | None = Field(description="a message's role; null for other kinds")
    date: datetime | None
    snippet: str = Field(description="plain text around the matches (no HTML)")
    highlights: list[tuple[int, int]] = Field(description=HIGHLIGHTS)
    copies: int = Field(description="entries of the tape that repeat this one (stream deltas, prompt copies)")
    identical: list[str] = Field(
        description="the tape ids of identical tapes (copies of this tape's file) whose same entry is "
        "folded into this hit"
    )
    score: float


class HitPageOut(Schema):
    items: list[HitOut]
    next_cursor: str | None
    total: int = Field(
        description=f"matching entries (before folding copies), counted up to {engine.COUNT_LIMIT}; with "
        f"`count=exact`, all of them where counting takes at most {COUNT_SECONDS} s"
    )
    total_capped: bool = Field(
        description="more entries match than `total`: past the limit, or (with `total_exact` false "
        "after `count=exact`) past the time an exact count may take, when `total` means at least that many"
    )
    total_exact: bool = Field(description="`total` is every matching entry")
    total_note: str = Field(description="what `total` counts, and why grep over the files finds more lines")


class SearchFilters(PageIn):
    q: str = Field(
        min_length=1, max_length=500, pattern=TEXT, description=f"words, or a phrase in quotes. {SEARCHABLE}"
    )
    source: str | None = Field(None, max_length=100, pattern=TEXT)
    tape: str | None = Field(None, max_length=32, pattern=TEXT, description="a tape id")
    kinds: str | None = Field(None, max_length=500, pattern=TEXT, description="comma-separated kinds")
    since: date | None = Field(None, description="entries of this day (UTC) or later")
    until: date | None = Field(None, description="entries of this day (UTC) or earlier")
    role: str | None = Field(None, max_length=40, pattern=TEXT, description="messages of this role")
    label: str | None = Field(
        None, max_length=40, pattern=TEXT, description="entries whose current review has this label"
    )
    score: int | None = Field(None, ge=1, le=5, description="entries whose current review has this score")
    name: str | None = Field(
        None, max_length=200, pattern=TEXT, description="events and anchors of this name or below it"
    )
    filter: str | None = Field(
        None,
        description="the session index's filter language (docs/filters.md): only the entries of the tapes "
        'it keeps, e.g. `kind == "bub" and errors > 0`; one that does not parse is a 400 saying where',
    )
    order: Literal["relevance", "time"] = "relevance"
    count: Literal["capped", "exact"] = Field(
        "capped",
        description=f"`exact` counts every matching entry, for at most {COUNT_SECONDS} s "
        "(TAPEVIEW_SEARCH_COUNT_SECONDS); past that `total` is the capped count and `total_capped` true",
    )


class MemoryHitOut(Schema):
    store_id: str
    kind: str
    snippet: str = Field(description="plain text around the matches (no HTML)")
    highlights: list[tuple[int, int]] = Field(description=HIGHLIGHTS)
    date: datetime | None
    score: float


class MemoryHitPageOut(Schema):
    items: list[MemoryHitOut]
    next_cursor: str | None


class MemorySearchFilters(PageIn):
    q: str = Field(min_length=1, max_length=500, pattern=TEXT)
    store: str | None = Field(None, max_length=32, pattern=TEXT)
    kind: str | None = Field(None, max_length=40, pattern=TEXT, description="a kind or its family: nanobot")
    order: Literal["relevance", "time"] = "relevance"


router = Router(tags=["search"])


@router.get("/search", response=responses({200: HitPageOut}, 400))
def search_tapes(request: HttpRequest, filters: Query[SearchFilters]) -> dict:
    """Full-text search over every entry of every tape, best matches first. The entries of a tape
    that repeat a hit (yachiyo's stream deltas and prompt copies, the same lines again) are folded
    into it and counted in its `copies`; a page holds `limit` hits after folding. Hits are ranked
    (or ordered by time) among the newest 2,000 matching entries, newest by the order tapes
    were found and entries written, or among as many as the page asked for needs: a common word
    costs what a rare one does."""
    return hit_page(filters)


def hit_page(filters: SearchFilters) -> dict:
    """A page of `search_tapes`' answer (also `tapeview search`'s)."""
    discovery.sync_if_stale()
    catchup.catch_up_unwatched()
    start = decode(filters.cursor, {"o": int})["o"] if filters.cursor else 0
    kinds = [k.strip() for k in (filters.kinds or "").split(",") if k.strip()] or None
    try:
        kept = expression.tape_q(filters.filter) if filters.filter else None
    except expression.FilterError as exc:
        raise HttpError(400, f"filter {exc}") from None
    found = {
        "source": filters.source,
        "tape_key": filters.tape,
        "kinds": kinds,
        "since": filters.since,
        "until": filters.until,
        "role": filters.role,
        "review_label": filters.label,
        "review_score": filters.score,
        "name": filters.name,
        "kept": kept,
    }
    hits = engine.search(filters.q, **found, order=filters.order, limit=filters.limit + 1, offset=start)
    count = engine.count(filters.q, exact=filters.count == "exact", **found)
    items = [
        {
            "tape_id": h.tape_key,
            "tape_label": h.tape_label,
            "host": h.host,
            "source": h.source,
            "pos": h.pos,
            "kind": h.kind,
            "role": h.role,
            "date": h.date,
            "snippet": h.snippet,
            "highlights": h.highlights,
            "copies": len(h.copies),
            "identical": [twin.tape_key for twin in h.twins],
            "score": h.score,
        }
        for h in hits[: filters.limit]
    ]
    more = len(hits) > filters.limit
    return {
        "items": items,
        "next_cursor": encode({"o": start + filters.limit}) if more else None,
        "total": count.total,
        "total_capped": count.capped,
        "total_exact": not count.capped,
        "total_note": engine.COUNT_NOTE,
    }


# Registered before the memory router, whose /memory/{store_id} would take "search" for a store id.
@router.get("/memory/search", response=responses({200: MemoryHitPageOut}, 400))
def search_memory(request: HttpRequest, filters: Query[MemorySearchFilters]) -> dict:
    """Full-text search over every memory store, best matches first."""
    start = decode(filters.cursor, {"o": int})["o"] if filters.cursor else 0
    hits = engine.search_memory(
        filters.q,
        store_key=filters.store,
        kind=filters.kind,
        order=filters.order,
        limit=filters.limit + 1,
        offset=start,
    )
    items = [
        {
            "store_id": h.store_key,
            "kind": h.kind,
            "snippet": h.snippet,
            "highlights": h.highlights,
            "date": h.date,
            "score": h.score,
        }
        for h in hits[: filters.limit]
    ]
    more = len(hits) > filters.limit
    return {"items": items, "next_cursor": encode({"o": start + filters.limit}) if more else None}
