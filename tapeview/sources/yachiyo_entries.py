"""A yachiyo session document as entries, in one flattened order (formats/yachiyo.md §A.4).

`pos` is an entry's 1-based index in this order (`offset` = pos - 1, `length` 0), by time as the
conversation ran (the file keeps messages, events and runs in three arrays):
- each `messages[]` record (`message`, name = role) at its `created_at`;
- each `runs[]` record as a phase `anchor` named "run N: <input>" (payload: the run), then the
  events of its `trace_id` in `events[]` order, together at the time the run began (its first
  event's, which the anchor is dated by; the run record is written when the run ends);
- likewise the events of traces with no run record yet (a run in flight, or one that died), each
  trace behind an anchor "run N: <input> (no run record)".
A user's message comes before the run it asks for, and the assistant's answer after its events.
Ties keep that order (messages, then runs, then runs without a record); an undated record keeps
its place after the one before it in the file.
The `llm.stream.delta` events of one stream fold into one `event` whose payload is
`{"text": <what they built>}`, and `tool_call.delta` events likewise per call. The `tool.call`
events of one step make one `tool_call` entry and its `tool.result` events one `tool_result`
(payload: the raw records), paired by call id. A folded entry keeps its raw records in
`meta["records"]` and their indices in `events[]` in `meta["event_indices"]`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime

from .model import Entry

_FOLD = {
    "llm.stream.delta": "text",
    "tool_call.delta": "args",
    "tool.call": "calls",
    "tool.result": "results",
}


def _list(doc: dict, key: str) -> list:
    value = doc.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def obj(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _inner(wrapper: object) -> dict:
    return obj(obj(wrapper).get("event"))


def body(wrapper: object) -> dict:
    return obj(_inner(wrapper).get("payload"))


def flatten(doc: dict) -> Iterator[Entry]:
    messages, events, runs = _list(doc, "messages"), _list(doc, "events"), _list(doc, "runs")
    blocks: list[list[dict]] = []  # rows that stay together: a message, or a run and its events
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m.get("role"), str) else ""
        meta = {"message_index": i, "id": m.get("id"), "trace_id": _key(m.get("trace_id"))}
        blocks.append([dict(kind="message", name=role, date=_date(m), payload=m, meta=meta)])
    traces: dict[object, list[int]] = {}
    for i, w in enumerate(events):
        traces.setdefault(_key(_inner(w).get("trace_id")), []).append(i)
    failed = {_key(body(w).get("call_id")) for w in events if body(w).get("error") is True}
    for n, run in enumerate(runs, 1):
        state = run.get("state")
        trace = _key(run.get("trace_id"))
        meta = {"run_index": n - 1, "id": run.get("id"), "trace_id": trace, "state": state}
        name = f"run {n}: {_snippet(run.get('input'))}"
        bad = isinstance(state, str) and state != "DONE"
        steps = _events(events, traces.pop(trace, []), failed)
        began = next((row["date"] for row in steps if row["date"] is not None), _date(run))
        anchor = dict(kind="anchor", name=name, date=began, payload=run, meta=meta, is_error=bad)
        blocks.append([anchor, *steps])
    for n, (trace, idxs) in enumerate(traces.items(), len(runs) + 1):
        plan = next((body(events[i]) for i in idxs if _inner(events[i]).get("event") == "plan"), {})
        name = f"run {n}: {_snippet(plan.get('input'))} (no run record)"
        meta = {"trace_id": trace, "state": None}
        anchor = dict(kind="anchor", name=name, date=_date(events[idxs[0]]), payload={}, meta=meta)
        blocks.append([anchor, *_events(events, idxs, failed)])
    rows = [row for block in _by_time(blocks) for row in block]
    for pos, row in enumerate(rows, 1):
        anchor = row["kind"] == "anchor"
        context = row["kind"] in ("message", "tool_call", "tool_result")
        yield Entry(pos, pos - 1, 0, None, **row, context=context, phase=anchor)


def _by_time(blocks: list[list[dict]]) -> list[list[dict]]:
    """The blocks in order of their first row's date, stably; an undated one after its predecessor."""
    keys: list[tuple] = []
    last: tuple = (float("-inf"),)
    for i, block in enumerate(blocks):
        date = block[0]["date"]
        last = (date.timestamp(), i) if date is not None else (*last, i)
        keys.append(last)
    return [block for _, block in sorted(zip(keys, blocks, strict=True), key=lambda pair: pair[0])]


def _events(events: list[dict], idxs: list[int], failed: set) -> list[dict]:
    groups: dict[tuple, list[int]] = {}
    streams = 0
    for i in idxs:
        ev = _inner(events[i])
        streams += ev.get("event") == "llm.stream.start"
        what = _FOLD.get(_key(ev.get("event")), "one")
        if what == "one":
            key: tuple = (what, i)
        elif what in ("calls", "results"):
            key = (what, _key(ev.get("step_index")))
        else:  # the deltas of one stream, per call for tool arguments
            b = body(events[i])
            key = (what, streams, _key(b.get("call_id") or b.get("index")) if what == "args" else None)
        groups.setdefault(key, []).append(i)
    return [_group(key[0], [events[i] for i in group], group, failed) for key, group in groups.items()]


def _group(what: str, records: list[dict], idxs: list[int], failed: set) -> dict:
    first, bodies = _inner(records[0]), [body(w) for w in records]
    name = first.get("event") if isinstance(first.get("event"), str) else ""
    meta = {"trace_id": _key(first.get("trace_id")), "step_index": _key(first.get("step_index"))}
    row = dict(kind="event", name=name, date=_date(records[0]), meta=meta)
    if what == "one":
        call = _key(bodies[0].get("call_id"))
        last = name.rsplit(".", 1)[-1]
        # A failed call has both an erroring tool.result and a tool.error: count it once.
        error = "error" in last and not (name == "tool.error" and call in failed)
        meta.update(event_index=idxs[0], seq=first.get("seq"))
        return row | dict(payload=records[0], is_error=error)
    meta.update(
        event_indices=idxs, records=records, folded=len(records), call_ids=[b.get("call_id") for b in bodies]
    )
    if what == "text":
        return row | dict(payload={"text": "".join(as_text(b.get("delta")) for b in bodies)})
    if what == "args":
        text = "".join(as_text(b.get("args_delta")) for b in bodies)
        return row | dict(
            payload={"call_id": bodies[0].get("call_id"), "name": bodies[0].get("name"), "text": text}
        )
    names = ", ".join(as_text(b.get("name")) or "?" for b in bodies)
    if what == "calls":
        return row | dict(kind="tool_call", name=names, payload=records)
    error = any(result_failed(b) for b in bodies)
    return row | dict(kind="tool_result", name=names, payload=records, is_error=error)


def _key(value: object) -> object:
    """An id to group by: a JSON scalar as it is; a list or object (a hand-edited file) by its type."""
    return f"<{type(value).__name__}>" if isinstance(value, (list, dict)) else value


def as_text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _snippet(text: object, limit: int = 48) -> str:
    line = " ".join(as_text(text).split())
    return line[:limit] + ("…" if len(line) > limit else "")


def _date(record: dict) -> datetime | None:
    stamp = record.get("created_at")
    try:
        parsed = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
        return parsed.astimezone() if parsed and parsed.tzinfo is None else parsed
    except (ValueError, OverflowError, OSError):  # not a date, or one local time cannot hold
        return None


def decode_result(result: object) -> object:
    """A tool result is a JSON string; its value, or the string when it does not parse."""
    try:
        return json.loads(result) if isinstance(result, str) else result
    except (ValueError, RecursionError):  # a result nested 10,000 deep stays the string it is
        return result


def result_failed(body: dict) -> bool:
    decoded = decode_result(body.get("result"))
    return body.get("error") is True or (isinstance(decoded, dict) and decoded.get("ok") is False)
