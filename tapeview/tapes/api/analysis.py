"""The analysis API of one tape: its phases, its handoff lineage, its context budget."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from .. import budget, lineage, lookup, phases
from .cursor import decode, encode
from .schemas import PageIn, responses


class PhaseAnchorOut(Schema):
    name: str
    pos: int
    state: Any = Field(description="the anchor's whole state; null where it has none")


class PhaseTokensOut(Schema):
    prompt: int | None
    completion: int | None
    cached: int | None


class PhaseOut(Schema):
    index: int = Field(description="0: the span before the first anchor; then 1, 2, ... in file order")
    anchor: PhaseAnchorOut | None = Field(description="null for the span before the first anchor")
    start_pos: int
    end_pos: int
    entries: int = Field(description="entries of the phase, its anchor not counted")
    started_at: datetime | None
    ended_at: datetime | None
    duration_s: float | None
    tokens: PhaseTokensOut = Field(description="sums of the usage the agent reported; null: none reported")
    tool_calls: int
    errors: int
    model: str | None = Field(description="the last model seen in the phase; null: the tape names none")
    messages: dict[str, int] = Field(description="message entries by role")


class PhasePageOut(Schema):
    items: list[PhaseOut]
    next_cursor: str | None


class StateDiffOut(Schema):
    added: list[str]
    removed: list[str]
    changed: list[str]
    summary: list[dict[str, str]] | None = Field(
        description='the summary diffed by words, `[{"op": "equal"|"delete"|"insert", "text"}]`; '
        "null when it did not change"
    )


class LinkOut(Schema):
    anchor: str
    pos: int
    date: datetime | None
    state: Any
    diff_from_previous: StateDiffOut | None = Field(description="null for the first anchor of the chain")
    tape_id: str = Field(description="the tape the anchor is in: an archive of this session, or itself")


class LinkPageOut(Schema):
    items: list[LinkOut]
    next_cursor: str | None


class BudgetOut(Schema):
    tokens_since_anchor: int | None
    window: int | None = Field(description="the model's context window; null: unknown")
    window_source: Literal["config", "model"] | None = Field(
        description="config: the window the agent's own config sets (nanobot's contextWindowTokens); "
        "model: the known window of the model (or TAPEVIEW_MODEL_WINDOWS); null: unknown"
    )
    ratio: float | None = Field(description="tokens_since_anchor / window; null when the window is unknown")
    source: Literal["reported", "estimated"]
    suggested_handoff_pos: int | None = Field(
        description="the last turn boundary where the context was at most half the window: a handoff "
        "after this entry keeps it there; null when the window is unknown or the tape takes no handoff"
    )
    model: str | None
    anchor_pos: int | None = Field(description="the last anchor; null: none, the whole tape counts")
    warn: bool = Field(description="ratio is at or above the warning threshold")
    threshold: float
    overflowed: bool = Field(description="the tape has overflowed its context before")
    capped: bool = Field(
        description="an estimate that read or counted only in part, the rest priced by size: a lower bound"
    )
    over: bool = Field(description="ratio is at or above 1: the model cannot take this context")
    writing: bool = Field(description="an unfinished line ends the tape: the agent is writing it")
    mid_turn: bool = Field(
        description="the tape's last entry ends no turn (the agent is mid-turn, or stopped in one): "
        "a handoff written now gets 409 busy until the turn ends; suggested_handoff_pos is a boundary "
        "before that turn"
    )


router = Router(tags=["tapes"])


def phase_out(tape_states: dict[int, Any], p: phases.Phase) -> dict:
    anchor = p.anchor
    return {
        "index": p.index,
        "anchor": {"name": anchor.name, "pos": anchor.pos, "state": tape_states.get(anchor.pos)}
        if anchor
        else None,
        "start_pos": p.start_pos,
        "end_pos": p.end_pos,
        "entries": p.entries,
        "started_at": p.started_at,
        "ended_at": p.ended_at,
        "duration_s": p.duration_s,
        "tokens": {"prompt": p.prompt_tokens, "completion": p.completion_tokens, "cached": p.cached_tokens},
        "tool_calls": p.tool_calls,
        "errors": p.errors,
        "model": p.model or None,
        "messages": p.roles,
    }


@router.get("/tapes/{tape_id}/phases", response=responses({200: PhasePageOut}, 400, 404))
def list_phases(request: HttpRequest, tape_id: str, page: Query[PageIn]) -> dict:
    """The tape's phases in order, each with its statistics as the index keeps them."""
    tape = lookup.find_tape(tape_id)
    after = decode(page.cursor, {"i": int})["i"] if page.cursor else None
    found, more = phases.in_order(tape, after, page.limit)
    states = lineage.states(tape, [p.anchor for p in found if p.anchor])
    return {
        "items": [phase_out(states, p) for p in found],
        "next_cursor": encode({"i": found[-1].index}) if more and found else None,
    }


@router.get("/tapes/{tape_id}/lineage", response=responses({200: LinkPageOut}, 400, 404))
def list_lineage(request: HttpRequest, tape_id: str, page: Query[PageIn]) -> dict:
    """The session's phase anchors with their state, its archives' first, each diffed with the one before."""
    tape = lookup.find_tape(tape_id)
    after = None
    if page.cursor:
        key = decode(page.cursor, {"t": int, "pos": int})
        after = (key["t"], key["pos"])
    found, more = lineage.links(tape, after, page.limit)
    items = [
        {
            "anchor": link.anchor.name,
            "pos": link.anchor.pos,
            "date": link.anchor.date,
            "state": link.state,
            "diff_from_previous": link.diff,
            "tape_id": link.tape.key,
        }
        for link in found
    ]
    last = found[-1] if found else None
    next_cursor = encode({"t": last.place, "pos": last.anchor.pos}) if more and last else None
    return {"items": items, "next_cursor": next_cursor}


@router.get("/tapes/{tape_id}/budget", response=responses({200: BudgetOut}, 404, 503))
def get_budget(request: HttpRequest, tape_id: str) -> dict:
    """Tokens since the last anchor against the model's context window, and where a handoff fits."""
    b = budget.measure(lookup.find_tape(tape_id))
    return {
        "tokens_since_anchor": b.tokens_since_anchor,
        "window": b.window,
        "window_source": b.window_source or None,
        "ratio": b.ratio,
        "source": b.source,
        "suggested_handoff_pos": b.suggested_handoff_pos,
        "model": b.model or None,
        "anchor_pos": b.anchor_pos,
        "warn": b.warn,
        "threshold": b.threshold,
        "overflowed": b.overflowed,
        "capped": b.capped,
        "mid_turn": b.mid_turn,
        "over": b.over,
        "writing": b.writing,
    }
