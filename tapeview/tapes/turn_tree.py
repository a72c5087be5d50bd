"""A page of a tape's turns as a trace viewer draws them: each turn a tree of its model calls and
tool calls (each tool call with its result), with tokens, cost, duration and errors per node.

A page is read from a cursor: the position it starts after and what the turns before it left (their
number, the phase and the model then), so a page of a tape of 10,000 turns reads that page's entries,
never the tape. A turn is read whole up to ENTRY_CAP entries; one longer than that is cut, and the
next page goes on with the rest of it as the same turn, continued.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from tapeview.sources import Entry, reader

from . import copy_reader, prices, timeline, turns
from .models import Tape

PAGE_TURNS = 20  # turns on a page unless asked for fewer
MAX_TURNS = 100  # the most a page holds
ENTRY_BUDGET = 2000  # entries past which a page ends after its turn in progress
ENTRY_CAP = 10_000  # entries past which a page cuts the turn it is reading
BATCH = 500  # entries read from the index at a time
NODE_ID = re.compile(r"^(t|m)([1-9][0-9]{0,17})$|^x([1-9][0-9]{0,17})\.([0-9]{1,6})$")


def node_cost(
    model: str, input_tokens: int | None, output_tokens: int | None, cached: int | None
) -> float | None:
    """A model call's cost in USD at the price table's figures for its model (tapes.prices), None
    where the model, its price or its tokens are unknown: never guessed (the pages show a dash, the
    API null)."""
    price = prices.current().find(model) if model else None
    if price is None or (input_tokens is None and output_tokens is None):
        return None
    return price.cost(input_tokens or 0, output_tokens or 0, cached or 0)


@dataclass(frozen=True)
class Start:
    """Where a page starts: after this position, with the turns before it and their phase and model."""

    after: int = 0
    turns: int = 0
    phase: str = ""
    model: str = ""
    continued: bool = False  # the page before cut its last turn: the first one here goes on with it

    def key(self) -> dict:
        return {"a": self.after, "n": self.turns, "p": self.phase, "m": self.model, "c": int(self.continued)}

    @classmethod
    def of(cls, key: dict) -> Start:
        return cls(key["a"], key["n"], key["p"], key["m"], bool(key["c"]))


KEY_TYPES = {"a": int, "n": int, "p": str, "m": str, "c": int}  # what a cursor of a Start holds


@dataclass
class Node:
    """A turn, or one of its model calls or tool calls."""

    id: str  # t<first pos>, m<pos>, x<pos>.<index>: stable as long as the entries are
    kind: str  # "turn", "model_call" or "tool_call"
    name: str  # the model, the tool's name, "turn N"
    pos: int
    positions: list[int]  # the entries it is read from
    start: datetime | None
    end: datetime | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost: float | None = None
    error: str = ""  # why it failed; "" for none
    input: Any = None
    output: Any = None
    answered: bool = True  # a tool call's result was read
    children: list[Node] = field(default_factory=list)

    @property
    def tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    @property
    def duration_ms(self) -> int | None:
        if self.start is None or self.end is None or self.end < self.start:
            return None
        return round((self.end - self.start).total_seconds() * 1000)

    def attributes(self) -> dict[str, Any]:
        """What the detail pane's attributes tab and the API say of the node besides its content."""
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "pos": self.pos,
            "positions": self.positions,
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "duration_ms": self.duration_ms,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "tokens": self.tokens,
            "cost": self.cost,
            "error": self.error or False,
        }


@dataclass
class TurnNode(Node):
    number: int = 0
    complete: bool = True
    continued: bool = False  # the rest of a turn the page before cut
    cut: bool = False  # too long for one page: the next page goes on with it
    phase: str = ""
    phase_after: str = ""
    model: str = ""
    first_pos: int = 0
    last_pos: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def model_calls(self) -> int:
        return sum(1 for c in self.children if c.kind == "model_call")

    @property
    def tool_calls(self) -> int:
        return sum(1 for c in self.children if c.kind == "tool_call")

    def attributes(self) -> dict[str, Any]:
        # A turn's lines are a range: thousands of them are said in one line, not listed.
        extra = {
            "positions": f"{self.first_pos}–{self.last_pos}",
            "phase": self.phase,
            "complete": self.complete,
        }
        return {**super().attributes(), **extra}

    def walk(self) -> Iterator[Node]:
        yield self
        yield from self.children


@dataclass
class TurnPage:
    turns: list[TurnNode]
    start: Start
    next: Start | None  # None: the tape ends with this page

    def find(self, node_id: str) -> Node | None:
        return next((n for t in self.turns for n in t.walk() if n.id == node_id), None)


def page(tape: Tape, start: Start, limit: int = PAGE_TURNS) -> TurnPage:
    """Up to `limit` turns after `start.after`; raises TapeNotFound when the file is gone."""
    limit = max(1, min(limit, MAX_TURNS))
    read = _Counted(tape, start.after)
    at = turns.Position(start.turns, start.phase, start.model)
    found: list[TurnNode] = []
    stopped = False  # the page is full: the tape may go on after it
    with copy_reader.reading(tape.host):
        for turn in turns.read(reader(tape.kind), read.entries(), at):
            cut = read.capped and not turn.complete
            found.append(tree(turn, continued=start.continued and not found, cut=cut))
            if len(found) == limit or read.count >= ENTRY_BUDGET:
                stopped = True
                break
    if not found:
        return TurnPage([], start, None)
    last = found[-1]
    more = (stopped or last.cut) and last.last_pos < tape.next_pos - 1
    after = Start(
        last.last_pos,
        last.number - 1 if last.cut else last.number,
        last.phase_after,
        last.model,
        continued=last.cut,
    )
    return TurnPage(found, start, after if more else None)


class _Counted:
    """A tape's entries after a position, in file order, counted; none past ENTRY_CAP."""

    def __init__(self, tape: Tape, after: int) -> None:
        self.tape, self.after, self.count, self.capped = tape, after, 0, False

    def entries(self) -> Iterator[Entry]:
        after = self.after
        while self.count < ENTRY_CAP:
            rows = timeline.find_rows(self.tape, after=after, limit=min(BATCH, ENTRY_CAP - self.count))
            if not rows:
                return
            for e in sorted(timeline.read_rows(self.tape, rows), key=lambda e: e.pos):
                self.count += 1
                yield e
            after = rows[-1].pos
        self.capped = after < self.tape.next_pos - 1


def tree(turn: turns.Turn, continued: bool = False, cut: bool = False) -> TurnNode:
    """A turn as a node whose children are its model calls and tool calls, in the order of the tape."""
    calls = [_model_call(c) for c in turn.calls]
    tools = [_tool_call(t) for t in turn.tools]
    children = _ordered(calls, tools)
    known = [c for c in calls if c.tokens is not None]
    node = TurnNode(
        id=f"t{turn.first_pos}",
        kind="turn",
        name=f"turn {turn.number}",
        pos=turn.first_pos,
        positions=list(range(turn.first_pos, turn.last_pos + 1)),
        start=turn.start,
        end=turn.end,
        input=turn.input,
        output=turn.output,
        children=children,
        number=turn.number,
        complete=turn.complete,
        continued=continued,
        cut=cut,
        phase=turn.phase,
        phase_after=turn.phase_after,
        model=turn.model,
        first_pos=turn.first_pos,
        last_pos=turn.last_pos,
        errors=list(turn.errors),
        error="; ".join(turn.errors),
    )
    if known:
        node.input_tokens = sum(c.input_tokens or 0 for c in known)
        node.output_tokens = sum(c.output_tokens or 0 for c in known)
        node.cached_tokens = (
            sum(c.cached_tokens or 0 for c in known) if any(c.cached_tokens for c in known) else None
        )
    costs = [c.cost for c in calls]
    node.cost = sum(costs) if costs and all(c is not None for c in costs) else None  # type: ignore[arg-type]
    return node


def _ordered(calls: list[Node], tools: list[Node]) -> list[Node]:
    """Each model call followed by the tool calls it asked for (read from the same entry); a tool call
    no model call asked for (its answer unread yet) where its entry is."""
    out: list[Node] = []
    left = list(tools)
    for call in calls:
        asked = [t for t in left if t.pos in call.positions]
        left = [t for t in left if t not in asked]
        out += [call, *asked]
    for tool in left:
        at = next((i for i, n in enumerate(out) if n.pos > tool.pos), len(out))
        out.insert(at, tool)
    return out


def _model_call(c: turns.ModelCall) -> Node:
    return Node(
        id=f"m{c.pos}",
        kind="model_call",
        name=c.model or "model",
        pos=c.pos,
        positions=c.positions or [c.pos],
        start=c.start,
        end=c.end,
        input_tokens=c.input_tokens,
        output_tokens=c.output_tokens,
        cached_tokens=c.cached_tokens,
        cost=node_cost(c.model, c.input_tokens, c.output_tokens, c.cached_tokens),
        error=c.error,
        input=c.inputs,
        output=c.outputs,
    )


def _tool_call(t: turns.ToolCall) -> Node:
    positions = [t.pos] if t.result_pos in (None, t.pos) else [t.pos, t.result_pos]
    return Node(
        id=f"x{t.pos}.{t.index}",
        kind="tool_call",
        name=t.name,
        pos=t.pos,
        positions=positions,
        start=t.start,
        end=t.end if t.answered else None,
        error="the tool reported an error" if t.error else "",
        input=decoded(t.arguments),
        output=t.result,
        answered=t.answered,
    )


def decoded(arguments: Any) -> Any:
    """Tool-call arguments are often JSON in a string: shown decoded when they decode."""
    if isinstance(arguments, str):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments
