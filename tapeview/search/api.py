"""The search API: every entry of every tape, every item of every memory store."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from tapeview.tapes import discovery
from tapeview.tapes.api.cursor import decode, encode
from tapeview.tapes.api.schemas import TEXT, PageIn, responses

from . import engine


class HitOut(Schema):
    tape_id: str
    pos: int = Field(description="the entry: GET /api/tapes/{tape_id}/entries/{pos}")
    kind: str
    date: datetime | None
    snippet: str = Field(description="HTML: the matching text escaped, the matches in <mark>")
    score: float


class HitPageOut(Schema):
    items: list[HitOut]
    next_cursor: str | None


class SearchFilters(PageIn):
    q: str = Field(min_length=1, max_length=500, pattern=TEXT, description="words, or a phrase in quotes")
    source: str | None = Field(None, max_length=100, pattern=TEXT)
    tape: str | None = Field(None, max_length=32, pattern=TEXT, description="a tape id")
    kinds: str | None = Field(None, max_length=500, pattern=TEXT, description="comma-separated kinds")
    since: date | None = Field(None, description="entries of this day (UTC) or later")
    until: date | None = Field(None, description="entries of this day (UTC) or earlier")
    role: str | None = Field(None, max_length=40, pattern=TEXT, description="messages of this role")
    name: str | None = Field(
        None, max_length=200, pattern=TEXT, description="events and anchors of this name or below it"
    )
    order: Literal["relevance", "time"] = "relevance"


class MemoryHitOut(Schema):
    store_id: str
    kind: str
    snippet: str = Field(description="HTML: the matching text escaped, the matches in <mark>")
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
    """Full-text search over every entry of every tape, best matches first."""
    discovery.sync_if_stale()
    start = decode(filters.cursor, {"o": int})["o"] if filters.cursor else 0
    kinds = [k.strip() for k in (filters.kinds or "").split(",") if k.strip()] or None
    hits = engine.search(
        filters.q,
        source=filters.source,
        tape_key=filters.tape,
        kinds=kinds,
        since=filters.since,
        until=filters.until,
        role=filters.role,
        name=filters.name,
        order=filters.order,
        limit=filters.limit + 1,
        offset=start,
    )
    items = [
        {
            "tape_id": h.tape_key,
            "pos": h.pos,
            "kind": h.kind,
            "date": h.date,
            "snippet": h.snippet_html,
            "score": h.score,
        }
        for h in hits[: filters.limit]
    ]
    more = len(hits) > filters.limit
    return {"items": items, "next_cursor": encode({"o": start + filters.limit}) if more else None}


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
        {"store_id": h.store_key, "kind": h.kind, "snippet": h.snippet_html, "date": h.date, "score": h.score}
        for h in hits[: filters.limit]
    ]
    more = len(hits) > filters.limit
    return {"items": items, "next_cursor": encode({"o": start + filters.limit}) if more else None}
