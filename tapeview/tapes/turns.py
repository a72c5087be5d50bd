"""A tape's entries grouped as a trace viewer draws an agent: turns, each with its model calls and tool calls.

Plain Python over the entries of the reader contract. A turn runs from the message that starts it
(a user's, an automation's; a run of yachiyo's) to the entry that ends it; what comes between the
end of one turn and the start of the next (Bub's loop start, an anchor) opens the next turn, so a
turn read in one go and a turn read as it is appended are the same turn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tapeview.sources import Entry, Reader
from tapeview.sources.bub_tail import is_terminal
from tapeview.sources.model import AUTOMATION, call_id, content_text, json_text

# yachiyo writes a run whole once it has ended; a run still in these states may get more events.
RUNNING = frozenset({"RUNNING", "PENDING", "STREAMING", "QUEUED"})
# Bub events that name the model of the calls that follow (tapes.phase_tally reads them alike).
MODEL_EVENTS = ("run", "loop.start", "model_switch")
# What begins a turn in Bub's next format, whose user's message is written after the tools ran
# (formats/bub-next.md §5): as the timeline's turns (tapes.blocks), a loop's start or a comma command,
# or a line of another `bubturnid`.
NEXT_TURN_STARTS = ("loop.start", "command")
NEXT_FORMAT = "bub-next"


@dataclass
class ToolCall:
    pos: int  # the tool_call entry
    index: int  # the call's place among the entry's calls
    id: str | int | None
    name: str
    arguments: Any
    start: datetime | None
    end: datetime | None = None
    result: Any = None
    answered: bool = False
    error: bool = False
    result_pos: int | None = None  # the tool_result entry


@dataclass
class ModelCall:
    pos: int  # the entry that ends the call (Bub's `run`, yachiyo's `llm.final`, the answer itself)
    start: datetime | None
    end: datetime | None
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    inputs: list[dict] = field(default_factory=list)  # the messages new since the last call
    outputs: list[dict] = field(default_factory=list)  # the answer: text and tool calls
    error: str = ""
    positions: list[int] = field(default_factory=list)  # the entries read into it, its own last


@dataclass(frozen=True)
class Mark:
    """An anchor of the tape; a phase anchor starts a phase."""

    pos: int
    name: str
    date: datetime | None
    phase: bool


@dataclass
class Turn:
    number: int  # 1, 2, ... in file order
    first_pos: int  # its first entry (what opened it before its start, included)
    last_pos: int
    start: datetime | None
    end: datetime | None
    started: bool  # a message or run started it (not only calls after the last turn's end)
    complete: bool  # its end was read: nothing later belongs to it
    fingerprint: str  # of the entry that starts it: tells a tape made again from the same one
    phase: str = ""  # the phase anchor it falls in
    phase_after: str = ""  # the phase its last entry falls in (an anchor in it starts one)
    model: str = ""  # the model its last call went to
    input: str = ""  # what the user said
    output: str = ""  # the last answer
    calls: list[ModelCall] = field(default_factory=list)
    tools: list[ToolCall] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class Position:
    """Where a reading of turns starts: the number of turns before it, the phase and model then."""

    turns: int = 0
    phase: str = ""
    model: str = ""


def read(source: Reader, entries: Iterable[Entry], at: Position | None = None) -> Iterator[Turn]:
    """The turns of these entries in file order; the last one with complete=False while its end is unread."""
    builder = _Builder(source, at or Position())
    for e in entries:
        yield from builder.add(e)
    last = builder.close()
    if last is not None:
        yield last


def fingerprint(e: Entry) -> str:
    text = f"{e.kind}\0{e.name}\0{e.date.isoformat() if e.date else ''}\0{json_text(e.payload)}"
    return hashlib.blake2b(text.encode(errors="replace"), digest_size=16).hexdigest()


def split_model(model: str) -> tuple[str, str]:
    """("openai", "gpt-4o-mini") of "openai:gpt-4o-mini" or "openai/gpt-4o-mini"; ("", model) unprefixed."""
    for sep in (":", "/"):
        provider, found, name = model.partition(sep)
        if found and provider and name:
            return provider, name
    return "", model


class _Builder:
    def __init__(self, source: Reader, at: Position) -> None:
        self.source, self.kind = source, source.KIND
        self.number, self.phase, self.model = at.turns, at.phase, at.model
        self.group: list[Entry] = []
        self.started = False
        self.turn_id: str | None = None  # the `bubturnid` of Bub's next format the turn's lines carry

    def add(self, e: Entry) -> Iterator[Turn]:
        if self.kind == "yachiyo" and e.kind == "message":
            return  # a run holds its input and output: the session's messages repeat them
        here = e.meta.get("bubturnid") if e.readable else None
        other = isinstance(here, str) and self.turn_id is not None and here != self.turn_id
        if self._starts(e) or other:
            self.turn_id = None
            if self.started or self._substantive():
                yield self._turn(complete=True)
            self.group, self.started = [*self.group, e], True  # what opened it belongs to it
            self.turn_id = here if isinstance(here, str) else None
            return
        if isinstance(here, str):
            self.turn_id = here
        self.group.append(e)
        if self._ends(e) and (self.started or self._substantive()):
            yield self._turn(complete=True)

    def close(self) -> Turn | None:
        if not (self.started or self._substantive()):
            return None
        done = self.kind == "yachiyo" and self._run_state() not in RUNNING
        return self._turn(complete=done)

    def _starts(self, e: Entry) -> bool:
        if not e.readable:
            return False
        if self.kind == "yachiyo":
            return e.is_anchor
        if e.meta.get("format") == NEXT_FORMAT:
            return e.kind == "event" and e.name in NEXT_TURN_STARTS
        return e.starts_turn or (e.kind == "message" and e.aside == AUTOMATION)

    def _ends(self, e: Entry) -> bool:
        if not e.readable or e.truncated:
            return False
        if self.kind == "bub":
            # A handoff is written between turns (formats/bub.md §4): it opens the next one, never ends this.
            return is_terminal(e) and e.kind != "anchor" and e.name != "handoff"
        if self.kind == "yachiyo":
            return e.kind == "event" and e.name == "done"
        return e.kind == "message" and e.name == "assistant" and not e.aside

    def _substantive(self) -> bool:
        """Calls, an answer or an error after the last turn's end, no user's message before them: a
        command's run, a message the agent sent of its own (nanobot's scheduled deliveries)."""
        return any(
            e.kind in ("tool_call", "error")
            or (e.kind == "event" and e.name == "run")
            or (e.kind == "message" and e.name == "assistant")
            for e in self.group
        )

    def _run_state(self) -> Any:
        start = next((e for e in self.group if e.is_anchor), None)
        return start.payload.get("state") if start is not None and isinstance(start.payload, dict) else None

    def _turn(self, complete: bool) -> Turn:
        entries, self.group = self.group, []
        started, self.started = self.started, False
        self.number += 1
        first = next((i for i, e in enumerate(entries) if self._starts(e)), 0) if started else 0
        opener = entries[first]
        turn = Turn(
            number=self.number,
            first_pos=entries[0].pos,
            last_pos=entries[-1].pos,
            start=None,
            end=None,
            started=started,
            complete=complete,
            fingerprint=fingerprint(opener),
        )
        _Walk(self, turn).run(entries, first)
        return turn


class _Walk:
    """One turn's entries read in order: its calls, its tools, its anchors and errors."""

    def __init__(self, builder: _Builder, turn: Turn) -> None:
        self.b, self.turn = builder, turn
        self.since: datetime | None = None  # when the model was last asked (what came before its answer)
        self.call_start: datetime | None = None  # Bub's step start, yachiyo's stream start
        self.inputs: list[dict] = []
        self.outputs: list[dict] = []
        self.output_date: datetime | None = None
        self.open: list[ToolCall] = []
        self.dates: list[datetime] = []
        self.read: list[int] = []  # entries since the last call
        self.closed: ModelCall | None = None  # a call its event ended before its answer was read
        self.failed: set[str] = set()  # ids of the tool calls a `tool.failed` event names

    def run(self, entries: list[Entry], first: int) -> None:
        turn = self.turn
        turn.phase = self.b.phase
        for i, e in enumerate(entries):
            if i >= first and e.date is not None:
                self.dates.append(e.date)
            self._mark(e)
            if i == first and turn.started:
                self.read.append(e.pos)
                self._open(e)
            elif e.readable and not e.truncated:
                self.read.append(e.pos)
                self._step(e)
            if e.kind == "unreadable" or (e.kind == "error" and e.readable):
                turn.errors.append(_error_text(e))
        if self.outputs:  # answered, but no event closed the call (Bub without `run` events)
            self._call(entries[-1].pos, self.output_date)
        for call in self.open:
            call.end = call.start
        turn.model, turn.phase_after = self.b.model, self.b.phase
        starts = [d for d in [*self.dates, *(c.start for c in turn.calls)] if d is not None]
        turn.start, turn.end = (min(starts), max(self.dates or starts)) if starts else (None, None)

    def _open(self, e: Entry) -> None:
        payload = e.payload if isinstance(e.payload, dict) else {}
        self.turn.phase = self.b.phase  # as it is where the turn starts, after what opened it
        if self.b.kind == "yachiyo":
            self.turn.input = content_text(payload.get("input"))
            self.turn.output = content_text(payload.get("output"))
            self.turn.phase = e.name
            self.inputs.append(_message("user", self.turn.input))
            if str(payload.get("state") or "").upper() in ("ERROR", "FAILED", "CANCELLED"):
                self.turn.errors.append(f"run {payload.get('state')}")
        elif e.kind == "message":
            self.turn.input = content_text(payload.get("content"))
            self.inputs.append(_message("user", self.turn.input))
        self.since = e.date

    def _mark(self, e: Entry) -> None:
        if self.b.kind == "yachiyo" and e.is_anchor:
            self.b.phase = e.name
            return
        if e.is_anchor or e.anchor:
            name = e.name if e.is_anchor else e.anchor
            self.turn.marks.append(Mark(e.pos, name, e.date, e.phase))
            if e.phase:
                self.b.phase = name

    def _step(self, e: Entry) -> None:
        kind, name = self.b.kind, e.name
        payload = e.payload if isinstance(e.payload, dict) else {}
        if e.kind == "event":
            data = payload.get("data") if isinstance(payload.get("data"), dict) else {}
            if name in MODEL_EVENTS and isinstance(data.get("model"), str) and data["model"]:
                self.b.model = data["model"]
            if (kind, name) in (("bub", "loop.step.start"), ("yachiyo", "llm.stream.start")):
                self.call_start = e.date
            elif kind == "bub" and name == "model.started":
                self.call_start, self.closed = e.date, None
            elif kind == "bub" and name in ("model.completed", "model.failed"):
                # Bub's next format writes the step's message, the model's answer, after this event.
                error = "model call failed" if name == "model.failed" else ""
                self._call(e.pos, e.date, usage=e, error=error)
                self.closed = self.turn.calls[-1]
            elif kind == "bub" and name == "tool.failed" and isinstance(e.meta.get("bubtoolcallid"), str):
                self.failed.add(e.meta["bubtoolcallid"])
            elif kind == "bub" and name == "run":
                error = "model call failed" if data.get("status") == "error" else ""
                self._call(e.pos, e.date, usage=e, error=error)
            elif kind == "yachiyo" and name == "llm.final":
                self._call(e.pos, e.date)
            elif kind == "yachiyo" and name == "llm.stream.delta" and isinstance(payload.get("text"), str):
                self._output({"type": "text", "content": payload["text"]}, e.date)
            return
        if e.kind == "tool_call":
            self._tool_calls(e)
        elif e.kind == "tool_result":
            self._tool_results(e)
        elif e.kind == "message" and name == "assistant":
            text = content_text(payload.get("content"))
            self.turn.output = text
            self._output({"type": "text", "content": text}, e.date)
            if kind in ("nanobot", "araliya"):  # each answer is one call of the model's
                self._call(e.pos, e.date)
        elif e.kind == "message" and name == "user" and e.pos != self.turn.first_pos:
            text = content_text(payload.get("content"))
            self.turn.input = self.turn.input or text  # Bub's next format: after the loop's start
            self.inputs.append(_message("user", text))
        if e.date is not None and e.kind != "message":
            self.since = self.since if self.outputs else e.date

    def _tool_calls(self, e: Entry) -> None:
        payload = e.payload if isinstance(e.payload, dict) else {}
        text = content_text(payload.get("content")) if self.b.kind == "nanobot" else ""
        if text:  # nanobot's assistant row: what the model said before its calls
            self._output({"type": "text", "content": text}, e.date)
        for i, c in enumerate(self.b.source.tool_calls(e)):
            name = c.get("name") if isinstance(c.get("name"), str) and c.get("name") else "(unnamed tool)"
            call = ToolCall(e.pos, i, call_id(c.get("id")), name, c.get("arguments"), e.date)
            self.turn.tools.append(call)
            self.open.append(call)
            call.error = call.id in self.failed
            self._output(
                {"type": "tool_call", "id": call.id, "name": name, "arguments": call.arguments}, e.date
            )
        if e.meta.get("format") == "bub-next" and self.b.source.tool_results(e):
            self._tool_results(e)  # the next format keeps a step's results in the entry of its calls
        if self.b.kind == "nanobot":  # the assistant row with the calls is one call of the model's
            self._call(e.pos, e.date)

    def _tool_results(self, e: Entry) -> None:
        for r in self.b.source.tool_results(e):
            ident = r.get("call_id")
            call = next((c for c in self.open if ident is not None and c.id == ident), None)
            if call is None and ident is None and self.open:
                call = self.open[0]  # Bub's results follow its calls in order, without ids
            error = bool(r.get("is_error")) or (ident is not None and ident in self.failed)
            if call is not None:
                self.open.remove(call)
                call.end, call.result, call.answered, call.error = e.date, r.get("content"), True, error
                call.result_pos = e.pos
            part = {
                "type": "tool_call_response",
                "id": call.id if call else ident,
                "response": r.get("content"),
            }
            self.inputs.append({"role": "tool", "parts": [part]})
        self.since = e.date

    def _output(self, part: dict, date: datetime | None) -> None:
        if self.closed is not None:  # the answer of the call its event ended
            if not self.closed.outputs:
                self.closed.outputs.append({"role": "assistant", "parts": []})
            self.closed.outputs[0]["parts"].append(part)
            if self.read and self.read[-1] not in self.closed.positions:
                self.closed.positions.append(self.read.pop())
            return
        if not self.outputs and self.call_start is None:
            self.call_start = self.since
        self.outputs.append(part)
        self.output_date = date or self.output_date

    def _call(self, pos: int, end: datetime | None, usage: Entry | None = None, error: str = "") -> None:
        call = ModelCall(pos, self.call_start or self.since or end, end, model=self.b.model, error=error)
        if usage is not None and usage.reports_usage:
            prompt = usage.prompt_tokens or 0
            call.input_tokens, call.output_tokens = prompt, max(0, usage.tokens - prompt)
            call.cached_tokens = usage.cached_tokens
        call.inputs, call.outputs = (
            self.inputs,
            ([{"role": "assistant", "parts": self.outputs}] if self.outputs else []),
        )
        call.positions = [*(p for p in self.read if p != pos), pos]
        self.turn.calls.append(call)
        self.inputs, self.outputs, self.call_start, self.since, self.read = [], [], None, end, []
        if error:
            self.turn.errors.append(error)


def _message(role: str, text: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _error_text(e: Entry) -> str:
    if not e.readable:
        return f"unreadable line {e.pos}: {e.problem}"
    payload = e.payload if isinstance(e.payload, dict) else {}
    message = payload.get("message")
    return message if isinstance(message, str) and message else content_text(e.payload) or "error"
