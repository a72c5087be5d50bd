"""The indexer's bulk path through a Bub tape: most lines only count.

A message, a tool call or result, a system prompt or an event that is no error changes nothing
but counts: the tape's and its phase's entries, dates, roles, tool calls, tokens and model. Such a
line is parsed here, in one loop over local names, without an Entry, a Row or an Anchor, and a
run of such lines is counted at once when something else needs the counts (`Counted`). Every
other line (anchors, errors, a label still wanted, anything unusual) goes, with its parsed JSON,
to the indexer's full path, which reads it exactly as the agent's reader does (sources.bub_lines)
before this loop goes on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Protocol

import orjson

from tapeview.sources.bub_lines import FIRST_ID, LAST_ID, NON_PHASE_PREFIXES
from tapeview.sources.bub_next import NOT_PARSED  # handed to the full path for a line that is not JSON
from tapeview.sources.python_json import count as token_count
from tapeview.sources.python_json import exact, reports_usage

from . import costs
from .bulk import AnchorRow
from .models import Tape, state_preview
from .packing import ANCHOR, CONTEXT, HAS_ID, READABLE, Batch, micros
from .phase_tally import MODEL_EVENTS, PhaseTally, dated

PLAIN_KINDS = frozenset({"message", "tool_call", "tool_result", "event", "system"})
IN_CONTEXT, OUT_OF_CONTEXT = READABLE | CONTEXT | HAS_ID, READABLE | HAS_ID


class Run(Protocol):
    """The indexing run the lane works for (tapes.index)."""

    tape: Tape
    tally: PhaseTally
    rows: Batch  # the batch being gathered
    anchors: list[AnchorRow]  # the batch's new anchor rows
    size: int  # entries in a batch

    def full(self, pos: int, offset: int, line: object, parsed: object) -> None:
        """The full path for one line: its bytes and parsed JSON (or NOT_PARSED), or its Entry."""

    def flush(self) -> None:
        """Write the batch out; `rows` is a new one after."""

    def wants_label(self) -> bool: ...


def index_lines(run: Run, lines: Iterable[tuple[int, int, object]]) -> None:
    """Index (pos, offset, line) in file order: a line is its bytes without the newline, or the
    Entry already read from the head of one too long to parse (sources.bub.lines)."""
    loads, fromiso, decode_error = orjson.loads, datetime.fromisoformat, orjson.JSONDecodeError
    tape, tally, size = run.tape, run.tally, run.size
    batch, plain_run = run.rows, Counted()
    for pos, offset, raw in lines:
        if type(raw) is not bytes:
            plain_run.settle(tape, tally)
            run.full(pos, offset, raw, NOT_PARSED)
            batch = run.rows
            continue
        try:
            obj = loads(raw)
        except decode_error:
            obj = NOT_PARSED
        plain = type(obj) is dict and tally.current is not None
        if plain:
            eid, kind, payload, date = obj.get("id"), obj.get("kind"), obj.get("payload"), obj.get("date")
            # (a kind that is a list or an object is unhashable: no `in` before its type is known)
            plain = type(eid) is int and type(kind) is str and kind in PLAIN_KINDS
            plain = plain and type(payload) is dict and type(date) is str
            plain = plain and eid < 2**63  # orjson reads ids to 2**64 - 1; past 63 bits is unreadable
        if plain:
            calls, name, data = 0, "", None
            if kind == "message":
                role = payload.get("role")
                name = role if type(role) is str else ""
                plain = not run.wants_label()
            elif kind == "tool_call":
                found = payload.get("calls")
                calls = len(found) if type(found) is list else 0
            elif kind == "tool_result":
                results = payload.get("results")
                plain = type(results) is not list or not any(
                    type(r) is dict and "message" in r and "kind" in r for r in results
                )
            elif kind == "event":
                name = payload.get("name")
                name = name if type(name) is str else ""
                data = payload.get("data")
                data = data if type(data) is dict else {}
                plain = not (
                    name.endswith(".error")
                    or data.get("status") == "error"
                    or (name == "loop.result" and data.get("error"))
                    or (name == "loop.start" and run.wants_label())
                )
        if plain:
            try:
                when = fromiso(date)
            except ValueError:
                when = None
            plain = when is not None and when.tzinfo is not None
        if not plain:
            plain_run.settle(tape, tally)
            if obj is NOT_PARSED or not anchor(run, pos, offset, raw, obj):
                run.full(pos, offset, raw, obj)
            batch = run.rows
            continue
        meta = obj.get("meta")
        length = len(raw) + 1  # and its newline
        batch.pos.append(pos)
        batch.offset.append(offset)
        batch.length.append(length)
        batch.entry_id.append(eid)
        batch.date.append(round(when.timestamp() * 1_000_000))  # packing.micros(), inline
        batch.kind.append(kind)
        batch.name.append(name)
        batch.flags.append(
            OUT_OF_CONTEXT if type(meta) is dict and meta.get("context") is False else IN_CONTEXT
        )
        plain_run.dates.append(when)
        plain_run.last = (pos, eid, offset + length)
        if calls:
            plain_run.calls += calls
        elif name and kind == "message":
            plain_run.roles.append(name)
        if data and name in MODEL_EVENTS:
            _model_and_usage(tape, tally.current, name, data)
        if len(batch) >= size:
            plain_run.settle(tape, tally)
            run.flush()
            batch = run.rows
    plain_run.settle(tape, tally)


def anchor(run: Run, pos: int, offset: int, raw: bytes, obj: object) -> bool:
    """A Bub anchor line (its bytes and orjson's reading of them) counted without an Entry, as the
    full path counts it (sources.bub_lines.parsed_line, index._account, PhaseTally.add), once the
    lines before it are counted; False, with nothing counted, for a line the full path must read
    (another shape, a date bub_lines reads otherwise, a wide integer).

    A tape may hold an anchor every few dozen lines (one every 24 in the real sample): the full
    path's Entry and its generic accounting were a third of such a tape's cold index."""
    if type(obj) is not dict or obj.get("kind") != "anchor" or exact(obj, raw) is not obj:
        return False
    eid, payload, date, meta = obj.get("id"), obj.get("payload"), obj.get("date"), obj.get("meta")
    if type(eid) is not int or not FIRST_ID <= eid <= LAST_ID or type(payload) is not dict:
        return False
    name = payload.get("name")
    if type(name) is not str or type(date) is not str:
        return False
    try:
        when = datetime.fromisoformat(date)
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    context = CONTEXT if type(meta) is not dict or meta.get("context") is not False else 0
    count_anchor(run, pos, offset, len(raw) + 1, eid, name, when, micros(when), context, payload.get("state"))
    return True


def count_anchor(
    run: Run,
    pos: int,
    offset: int,
    length: int,
    eid: int,
    name: str,
    when: datetime,
    date: int,
    context: int,
    state: object,
) -> None:
    """An anchor line of `length` bytes, as `anchor` reads it (or tapes/_lane.c does, for
    blocklane), counted: `date` is `when` in micros, `context` CONTEXT or 0, `state` its payload's."""
    tape, tally = run.tape, run.tally
    run.rows.add(pos, offset, length, eid, "anchor", name, date, READABLE | HAS_ID | ANCHOR | context)
    phase = not name.startswith(NON_PHASE_PREFIXES)
    row = AnchorRow(pos, name[:300], when, phase, state_preview(state))
    run.anchors.append(row)
    if phase:
        tape.phase_anchor_pos = pos
        tally.opened(row)
    elif tally.current is None:
        tally.current = AnchorRow(pos, phase_index=0)  # the span before any anchor
    current = tally.current
    current.end_pos = pos
    tally.touched = True
    if current is not row:  # a phase anchor's row marks its start; any other anchor is an entry of it
        current.entries += 1
    dated(current, when)
    tally.cut(name)
    tape.entries += 1
    tape.last_id = eid
    tape.first_at = when if tape.first_at is None or when < tape.first_at else tape.first_at
    tape.last_at = when if tape.last_at is None or when > tape.last_at else tape.last_at
    tally.anchored(pos, name)
    tape.indexed_offset, tape.next_pos = offset + length, pos + 1
    if len(run.rows) >= run.size:
        run.flush()


class Counted:
    """Plain lines taken since the full path last ran: counted into the tape and its phase in one
    step (sums and extremes over the run) before anything else reads them."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.dates: list[datetime] = []
        self.roles: list[str] = []
        self.calls = 0
        self.last: tuple[int, int, int] = (0, 0, 0)  # the last line's pos, id, end

    def settle(self, tape: Tape, tally: PhaseTally) -> None:
        if not self.dates:
            return
        # min() and max() keep the first of equal dates, as the full path's strict comparisons do.
        counted(tape, tally, len(self.dates), min(self.dates), max(self.dates), self.last)
        phase = tally.current
        phase.tool_calls += self.calls
        for role, count in Counter(name[:40] for name in self.roles).items():
            phase.roles[role] = phase.roles.get(role, 0) + count
        self._clear()


def counted(
    tape: Tape, tally: PhaseTally, n: int, low: datetime, high: datetime, last: tuple[int, int, int]
) -> None:
    """`n` lines dated from `low` to `high`, the last at `last` (pos, id, end), counted into the
    tape and its phase as the full path counts them one at a time."""
    pos, eid, end = last
    tape.entries += n
    tape.entries_since_anchor += n
    tape.last_id = eid
    if tape.first_at is None or low < tape.first_at:
        tape.first_at = low
    if tape.last_at is None or high > tape.last_at:
        tape.last_at = high
    tape.indexed_offset, tape.next_pos = end, pos + 1
    phase = tally.current
    phase.end_pos = pos
    phase.entries += n
    if phase.started_at is None:
        phase.started_at, phase.ended_at = low, high
    else:
        phase.ended_at = high if high > phase.ended_at else phase.ended_at
        phase.started_at = low if low < phase.started_at else phase.started_at
    tally.touched = True


def _model_and_usage(tape: Tape, phase, name: str, data: dict) -> None:
    """What a `run`, `loop.start` or `model_switch` event tells, as PhaseTally.add and the indexer
    count it from the Entry that sources.bub_lines makes of it."""
    model = data.get("model")
    if type(model) is str and model:
        phase.model = tape.model = model[:200]
    usage = data.get("usage") if name == "run" else None
    if not reports_usage(usage):
        return
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if type(details) is dict else 0
    add_usage(tape, phase, _int(usage.get("total_tokens")), _int(usage.get("prompt_tokens")), cached)


def add_usage(tape: Tape, phase, tokens: int, prompt: int, cached: int) -> None:
    """One model call's tokens, added to the tape's and its phase's figures."""
    tape.tokens = (tape.tokens or 0) + tokens
    if prompt:
        tape.last_prompt_tokens, tape.last_cached_tokens = prompt, cached
    tape.context_tokens = prompt  # the prompt of the latest call since the last anchor
    phase.prompt_tokens = (phase.prompt_tokens or 0) + prompt
    phase.completion_tokens = (phase.completion_tokens or 0) + max(0, tokens - prompt)
    phase.cached_tokens = (phase.cached_tokens or 0) + cached
    costs.add(tape, phase, prompt, max(0, tokens - prompt), cached)


_int = token_count  # as sources.bub_lines reads a token count
