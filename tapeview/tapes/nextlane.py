"""The indexer's bulk path through a tape in Bub's next format: most lines only count.

As tapes.fastlane does for 0.5.1 lines: a line that changes nothing but counts (a message, a system
prompt, an operation event that is no error, a model call's usage) is read here, in one loop over
local names, without an Entry, and a run of such lines is counted at once (fastlane.Counted). It
is taken only when it passes the checks Bub's next reader makes (sources.bub_next_lines.invalid:
the line's keys and its step's keys are checked once per shape, and remembered). Every other line
(anchors, errors, a status to read, a label still wanted, anything unusual) goes to the indexer's
full path, which reads it exactly as Bub's next reader does.

Where the compiled lane is built (tapes/_lane.c, its Bub-next reader in tapes/lane_next.h), it takes
the lines this lane would take, a block at a time and without a Python object per line, as
tapes.blocklane does for 0.5.1 lines; this module's own loop is then the reference it is tested
against, and the lane where it is not built.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import orjson

from tapeview.sources.bub_next_lines import _EXTENSION as EXTENSION
from tapeview.sources.bub_next_lines import (
    AGENT_ONLY,
    ATTRIBUTES,
    PREFIX,
    SOURCES,
    STATUS_EVENTS,
    SUFFIX,
    big_line,
)
from tapeview.sources.model import DISPLAY_PREVIEW_BYTES, SCAN_PARSE_LIMIT
from tapeview.sources.python_json import count, reports_usage

from . import blocklane, costs, fastlane
from .blocklane import DECLINED, Blocks, settle
from .blocklane import FULL as FILLED  # (take_next stopped: the batch is full)
from .fastlane import NOT_PARSED, Counted
from .phase_tally import MODEL_EVENTS

IN_CONTEXT, OUT_OF_CONTEXT = fastlane.IN_CONTEXT, fastlane.OUT_OF_CONTEXT
# Types whose lines the full path reads: what a user must see of them is more than a count.
FULL = frozenset({"context.anchor", "error", *STATUS_EVENTS})


def read(path: Path, start: int, first_pos: int) -> Blocks:
    """The tape's blocks of lines from byte `start` on (sources.bub.blocks), the first at `first_pos`."""
    return Blocks(path, start, first_pos)


SEP = object()  # between a line's keys and its step's in a shape's key
MESSAGE, FACT, USAGE = 1, 2, 3  # what a line of a shape is, when the lane may take it


def _shape(etype: str, source: str | None, keys: tuple) -> tuple[int, str, str, str]:
    """What the lane makes of lines of one shape (their type, step source, the line's keys then its
    step's): (0, ...) when the full path must read them, else (what, name, kind, role)."""
    at = keys.index(SEP)
    line, step = keys[:at], keys[at + 1 :]
    if not all(k in ATTRIBUTES or EXTENSION.fullmatch(k) for k in line):
        return 0, "", "", ""  # an extension CloudEvents refuses
    if source not in SOURCES or "message" not in step or (source == "user" and "observation" in step):
        return 0, "", "", ""
    if source != "agent" and any(k in step for k in AGENT_ONLY):
        return 0, "", "", ""
    typed = etype.startswith(PREFIX) and etype.endswith(SUFFIX)
    name = etype[len(PREFIX) : -len(SUFFIX)] if typed else etype
    if name in FULL or name.endswith(".failed"):
        return 0, "", "", ""
    if name == "message":
        kind, role = ("system", "") if source == "system" else ("message", SOURCES[source])
        return MESSAGE, name, kind, role
    return (USAGE if name == "model.completed" or name in MODEL_EVENTS else FACT), name, "event", name


def index_lines(run: fastlane.Run, items: Blocks) -> None:
    """Index the lines of `read`'s blocks in file order: in compiled code where it is built."""
    if blocklane.native is None:
        blocklane._not_built()
        python_lines(run, items)
    else:
        compiled_lines(run, items)


def compiled_lines(run: fastlane.Run, items: Blocks) -> None:
    """index_lines by the compiled lane (Lane.take_next), each line it leaves down the full path."""
    lane, pos = blocklane.native.Lane(), items.first_pos
    for offset, data, end in items:
        if end < 0:  # one line too long to read whole
            settle(run, lane)
            run.full(pos, offset, big_line(data, pos, offset, -end), NOT_PARSED)
            pos += 1
            continue
        at = 0
        while at < end:
            if run.tally.current is not None:  # (before the first entry, the full path starts a phase)
                rows = run.rows
                rows.lane = lane
                room, labels = run.size - len(rows), run.wants_label()
                at, pos, stopped = lane.take_next(data, at, pos, offset, room, labels, run.tape.overflowed)
                if stopped == FILLED:
                    settle(run, lane)
                    run.flush()
                    continue
                if stopped != DECLINED:
                    break
            stop = data.index(b"\n", at)
            line, length, where = data[at:stop], stop + 1 - at, offset + at
            settle(run, lane)
            if length > SCAN_PARSE_LIMIT:
                run.full(pos, where, big_line(line[:DISPLAY_PREVIEW_BYTES], pos, where, length), NOT_PARSED)
            elif line.strip():
                run.full(pos, where, line, NOT_PARSED)
            at, pos = stop + 1, pos + 1
    settle(run, lane)
    run.rows.lane = lane


def python_lines(run: fastlane.Run, items: Blocks) -> None:
    """index_lines in Python (split here, without a generator between: a tenth of the lane's time);
    a line too long to parse is the Entry its head makes (bub.lines)."""
    loads, decode_error, fromiso = orjson.loads, orjson.JSONDecodeError, datetime.fromisoformat
    tape, tally, size = run.tape, run.tally, run.size
    plain_run = Counted()
    shapes: dict[tuple, tuple[int, str, str, str]] = {}
    batch = run.rows
    rows = (
        batch.pos,
        batch.offset,
        batch.length,
        batch.entry_id,
        batch.date,
        batch.kind,
        batch.name,
        batch.flags,
    )
    next_pos = items.first_pos
    for start, block, end in items:
        if end < 0:  # one line too long to read whole
            lines: list = [big_line(block, next_pos, start, -end)]
        else:
            lines = block[: end - 1].split(b"\n")
        at = start
        for raw in lines:
            obj, what, pos, offset = NOT_PARSED, 0, next_pos, at
            next_pos += 1
            if type(raw) is bytes:
                at += len(raw) + 1
                if at - offset > SCAN_PARSE_LIMIT:
                    raw = big_line(raw[:DISPLAY_PREVIEW_BYTES], pos, offset, at - offset)
                else:
                    try:
                        obj = loads(raw)
                    except decode_error:  # (contextlib.suppress costs a call a line)
                        if not raw.strip():
                            continue  # a blank line: its position, no entry
            else:
                at += raw.length
            if type(obj) is dict and tally.current is not None:
                etype, eid, source_uri, when, data = (
                    obj.get("type"),
                    obj.get("id"),
                    obj.get("source"),
                    obj.get("time"),
                    obj.get("data"),
                )
                if (
                    type(etype) is str
                    and type(eid) is str
                    and type(source_uri) is str
                    and type(when) is str
                    and type(data) is dict
                    and etype
                    and eid
                    and source_uri
                    and obj.get("specversion") == "1.0"
                ):
                    source = data.get("source")
                    source = source if type(source) is str else None  # (a list is unhashable)
                    key = (etype, source, *obj, SEP, *data)
                    shape = shapes.get(key)
                    if shape is None:
                        shape = shapes[key] = _shape(etype, source, key[2:])
                    what, name, kind, role = shape
            if what:
                try:
                    moment = fromiso(when)
                except ValueError:
                    moment = None
                if moment is None or moment.tzinfo is None:
                    what = 0
            calls, payload, spent = 0, None, None
            if what == MESSAGE:
                if role == "assistant":
                    found = data.get("tool_calls")
                    if type(found) is list and found:
                        kind, role, calls = "tool_call", "", len(found)
                    model = data.get("model_name")
                    if type(model) is str and model:
                        tally.current.model = tape.model = model[:200]
                    metrics = data.get("metrics")
                    spent = metrics.get("cost") if type(metrics) is dict else None  # the agent's own figure
                if run.wants_label():
                    what = 0
            elif what == USAGE:
                payload = _payload(data, loads, decode_error)
                if payload is None or (name == "loop.start" and run.wants_label()):
                    what = 0
            if not what:
                plain_run.settle(tape, tally)
                run.full(pos, offset, raw, obj)
                if run.rows is not batch:
                    batch = run.rows
                    rows = (batch.pos, batch.offset, batch.length, batch.entry_id, batch.date, batch.kind,
                            batch.name, batch.flags)  # fmt: skip
                continue
            if spent is not None:
                costs.report(tape, tally.current, spent)
            length = len(raw) + 1  # and its newline
            rows[0].append(pos)
            rows[1].append(offset)
            rows[2].append(length)
            rows[3].append(pos)  # position is the id
            rows[4].append(round(moment.timestamp() * 1_000_000))  # packing.micros(), inline
            rows[5].append(kind)
            rows[6].append(role)
            rows[7].append(IN_CONTEXT if obj.get("bubcontext") is True else OUT_OF_CONTEXT)
            plain_run.dates.append(moment)
            plain_run.last = (pos, pos, offset + length)
            if calls:
                plain_run.calls += calls
            elif role and kind == "message":
                plain_run.roles.append(role)
            if payload is not None:
                _model_and_usage(tape, tally.current, name, payload)
            if len(rows[0]) >= size:
                plain_run.settle(tape, tally)
                run.flush()
                batch = run.rows
                rows = (batch.pos, batch.offset, batch.length, batch.entry_id, batch.date, batch.kind,
                        batch.name, batch.flags)  # fmt: skip
    plain_run.settle(tape, tally)


def _payload(data: dict, loads, decode_error) -> dict | None:
    """A fact's payload (sources.bub_next_lines.event_payload), or None where the full path must read it."""
    observation = data.get("observation")
    results = observation.get("results") if type(observation) is dict else None
    first = results[0] if type(results) is list and results else None
    content = first.get("content") if type(first) is dict else None
    if type(content) is not str:
        return {}
    try:
        payload = loads(content)
    except decode_error:
        return None  # (what json.loads reads besides: the full path's)
    return payload if type(payload) is dict else {}


def _model_and_usage(tape, phase, name: str, payload: dict) -> None:
    """What a `model.completed`, `loop.start` or `model_switch` line tells, as the full path counts it
    from the Entry sources.bub_next_lines makes of it (PhaseTally.add, index._account)."""
    if name != "model.completed":
        model = payload.get("model")
        if type(model) is str and model:
            phase.model = tape.model = model[:200]
        return
    usage = payload.get("usage")
    if not reports_usage(usage):
        return
    prompt = count(usage.get("prompt_tokens"))
    tokens = count(usage.get("total_tokens")) or prompt + count(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if type(details) is dict else 0
    fastlane.add_usage(tape, phase, tokens, prompt, cached)
