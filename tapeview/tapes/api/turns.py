"""A tape's turns, each with its model calls and tool calls: the API twin of the turns page."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from .. import lookup, turn_tree
from .cursor import decode, encode
from .schemas import responses


class TurnPageIn(Schema):
    limit: int = Field(turn_tree.PAGE_TURNS, ge=1, le=turn_tree.MAX_TURNS)
    cursor: str | None = Field(None, max_length=1000, pattern=r"^[A-Za-z0-9_-]*$")


class CallOut(Schema):
    id: str = Field(
        description="m<pos> of a model call, x<pos>.<index> of a tool call: the turns page's ?node="
    )
    kind: Literal["model_call", "tool_call"]
    name: str = Field(description="the model, or the tool's name")
    pos: int = Field(description="the entry that ends a model call; a tool call's own entry")
    positions: list[int] = Field(description="the entries it is read from")
    start: datetime | None
    end: datetime | None
    duration_ms: int | None
    tokens: int | None = Field(description="input + output tokens the provider reported; null: not recorded")
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    cost: float | None = Field(description="USD; null where unknown (no price is guessed)")
    error: bool | str = Field(description="false, or why it failed")


class TurnOut(Schema):
    id: str
    number: int
    first_pos: int
    last_pos: int
    start: datetime | None
    end: datetime | None
    duration_ms: int | None
    complete: bool = Field(description="its end was read: nothing later belongs to it")
    continued: bool = Field(description="the rest of a turn the page before cut (too long for one page)")
    phase: str
    model: str
    tokens: int | None
    cost: float | None
    error: bool | str = Field(description="false, or its errors joined")
    model_calls: int
    tool_calls: int
    children: list[CallOut]


class TurnPageOut(Schema):
    items: list[TurnOut]
    next_cursor: str | None


router = Router(tags=["tapes"])


def turn_out(t: turn_tree.TurnNode) -> dict:
    return {
        **_common(t),
        "number": t.number,
        "first_pos": t.first_pos,
        "last_pos": t.last_pos,
        "complete": t.complete,
        "continued": t.continued,
        "phase": t.phase,
        "model": t.model,
        "model_calls": t.model_calls,
        "tool_calls": t.tool_calls,
        "children": [
            {
                **_common(c),
                "kind": c.kind,
                "name": c.name,
                "pos": c.pos,
                "positions": c.positions,
                "input_tokens": c.input_tokens,
                "output_tokens": c.output_tokens,
                "cached_tokens": c.cached_tokens,
            }
            for c in t.children
        ],
    }


def _common(n: turn_tree.Node) -> dict:
    return {
        "id": n.id,
        "start": n.start,
        "end": n.end,
        "duration_ms": n.duration_ms,
        "tokens": n.tokens,
        "cost": n.cost,
        "error": n.error or False,
    }


@router.get("/tapes/{tape_id}/turns", response=responses({200: TurnPageOut}, 400, 404, 503))
def list_turns(request: HttpRequest, tape_id: str, page: Query[TurnPageIn]) -> dict:
    """Turns in file order, each with its model calls and tool calls; a page reads its own entries only."""
    tape = lookup.find_tape(tape_id)
    start = turn_tree.Start.of(decode(page.cursor, turn_tree.KEY_TYPES)) if page.cursor else turn_tree.Start()
    found = turn_tree.page(tape, start, page.limit)
    return {
        "items": [turn_out(t) for t in found.turns],
        "next_cursor": encode(found.next.key()) if found.next else None,
    }
