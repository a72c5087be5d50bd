"""The comparison API: two tapes, or two phases, side by side, and their steps aligned."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from ninja.errors import HttpError

from .. import alignment, comparison, lookup
from ..lookup import MAX_POS
from .schemas import TEXT, responses


class CompareIn(Schema):
    a: str = Field(max_length=lookup.KEY_LENGTH, pattern=TEXT, description="the first tape's id")
    b: str = Field(max_length=lookup.KEY_LENGTH, pattern=TEXT, description="the second tape's id")
    pa: int | None = Field(
        None,
        ge=0,
        le=MAX_POS,
        description="compare only a's phase whose anchor is at this position (0: "
        "the span before the first anchor); omitted: the whole tape",
    )
    pb: int | None = Field(None, ge=0, le=MAX_POS, description="as pa, of tape b")
    after_a: int | None = Field(
        None, ge=0, le=MAX_POS, description="align a's steps after this position (a page's next_a)"
    )
    after_b: int | None = Field(None, ge=0, le=MAX_POS, description="as after_a, of tape b")
    limit: int = Field(alignment.PAGE, ge=1, le=alignment.MAX_PAGE, description="steps of each side aligned")


class ToolOut(Schema):
    name: str
    calls: int


class ErrorRowOut(Schema):
    pos: int
    kind: str
    name: str


class PhaseRefOut(Schema):
    index: int
    anchor: str | None = Field(description="null for the span before the first anchor")
    start_pos: int
    end_pos: int


class SideOut(Schema):
    tape_id: str
    label: str
    kind: str
    phase: PhaseRefOut | None = Field(description="null: the whole tape")
    entries: int
    anchors: int
    errors: int
    tool_calls: int
    messages: dict[str, int] = Field(description="message entries by role")
    tokens: int | None = Field(description="the usage the agent recorded; null: none recorded")
    cost: float | None = Field(description="the tape's cost as reported (a phase: null)")
    started_at: datetime | None
    ended_at: datetime | None
    duration_s: float | None
    tools: list[ToolOut] = Field(description="each tool's calls, the most used first")
    tools_complete: bool = Field(
        description=f"false: named from the first {comparison.TOOL_ENTRIES:,} tool call entries only"
    )
    first_errors: list[ErrorRowOut] = Field(description=f"the first {comparison.ERRORS_LISTED} errors")
    state_anchor: str | None = Field(description="the anchor whose state is compared; null: none")
    state: Any = Field(description="that anchor's whole state")


class ChangeOut(Schema):
    path: str = Field(description='where the states differ, as "$.key[0].key"')
    op: Literal["added", "removed", "changed"] = Field(description="added: only in b; removed: only in a")
    a: str | None = Field(description="a's value as JSON text, bounded; null where a has none")
    b: str | None


class StateChangesOut(Schema):
    same: bool
    changes: list[ChangeOut]
    more: int = Field(description=f"changes past the first {comparison.DIFFS}, not listed")
    summary: list[dict[str, str]] | None = Field(
        description='the summaries diffed by words, `[{"op": "equal"|"delete"|"insert", "text"}]`; null '
        "when they are the same"
    )


class StepOut(Schema):
    pos: int
    kind: Literal["message", "tool_call", "anchor"]
    role: str
    text: str
    is_error: bool


class PairOut(Schema):
    op: Literal["equal", "replace", "delete", "insert"] = Field(
        description="equal: the same step on both sides; delete: only in a; insert: only in b"
    )
    a: StepOut | None
    b: StepOut | None


class AlignmentOut(Schema):
    pairs: list[PairOut]
    equal: int
    differ: int
    next_a: int | None = Field(description="pass as after_a (and next_b as after_b) for the next page")
    next_b: int | None
    more: bool = Field(description="either side has steps past this page")


class CompareOut(Schema):
    a: SideOut
    b: SideOut
    state_diff: StateChangesOut
    alignment: AlignmentOut


router = Router(tags=["tapes"])


def side_out(side: comparison.Side) -> dict:
    phase = side.phase
    return {
        "tape_id": side.tape.key,
        "label": side.tape.label,
        "kind": side.tape.kind,
        "phase": None
        if phase is None
        else {
            "index": phase.index,
            "anchor": phase.anchor.name if phase.anchor is not None else None,
            "start_pos": phase.start_pos,
            "end_pos": phase.end_pos,
        },
        **{
            name: getattr(side, name)
            for name in (
                "entries",
                "anchors",
                "errors",
                "tool_calls",
                "messages",
                "tokens",
                "cost",
                "started_at",
                "ended_at",
                "duration_s",
                "tools_complete",
                "state",
            )
        },
        "tools": [{"name": n, "calls": c} for n, c in side.tools],
        "first_errors": [{"pos": r.pos, "kind": r.kind, "name": r.name} for r in side.error_rows],
        "state_anchor": side.state_anchor.name if side.state_anchor else None,
    }


def _step(step: alignment.Step | None) -> dict | None:
    if step is None:
        return None
    return {name: getattr(step, name) for name in ("pos", "kind", "role", "text", "is_error")}


@router.get("/compare", response=responses({200: CompareOut}, 404))
def get_comparison(request: HttpRequest, query: Query[CompareIn]) -> dict:
    """Two tapes (or a phase of each) side by side: counts, tokens, cost, tools, errors, the anchors'
    states diffed, and their messages and tool calls aligned a page at a time."""
    a, b = lookup.find_tape(query.a), lookup.find_tape(query.b)
    try:
        found = comparison.compare(a, b, query.pa, query.pb)
    except comparison.NoSuchPhase as exc:
        raise HttpError(404, str(exc)) from None
    lined = alignment.align(found.a, found.b, query.after_a, query.after_b, query.limit)
    diff = found.state_diff
    return {
        "a": side_out(found.a),
        "b": side_out(found.b),
        "state_diff": {
            "same": diff.same,
            "changes": [vars(c) for c in diff.changes],
            "more": diff.more,
            "summary": diff.summary,
        },
        "alignment": {
            "pairs": [{"op": p.op, "a": _step(p.a), "b": _step(p.b)} for p in lined.pairs],
            "equal": lined.equal,
            "differ": lined.differ,
            "next_a": lined.next_a,
            "next_b": lined.next_b,
            "more": lined.more,
        },
    }
