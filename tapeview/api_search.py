"""The search API over every entry of every tape."""

from __future__ import annotations

from datetime import date, datetime
from types import ModuleType
from typing import Literal

from django.apps import apps
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from . import index
from .api_schemas import TEXT, PageIn, responses
from .cursor import decode, encode


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


router = Router(tags=["search"])


def search_engine() -> ModuleType:
    """The search engine, or 503 where the search app is not installed."""
    if not apps.is_installed("tapeview.search"):
        raise HttpError(503, "search is not available on this server")
    # Imported here: its models exist only where the search app is installed.
    from .search import engine

    return engine


@router.get("/search", response=responses({200: HitPageOut}, 400, 503))
def search_tapes(request: HttpRequest, filters: Query[SearchFilters]) -> dict:
    """Full-text search over every entry of every tape, best matches first."""
    engine = search_engine()
    index.sync_if_stale()
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
