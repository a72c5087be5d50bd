"""yachiyo sessions: one JSON document per session in `session-store/`, rewritten wholesale.

Follows ../shared/formats/yachiyo.md (§A.3, §A.4). `pos` is an entry's 1-based index in this
flattened order of the document (`offset` = pos - 1, `length` 0):
1. the `messages[]` records (`message`, name = role);
2. each `runs[]` record as a phase `anchor` named "run N: <input>" (payload: the run), then the
   events of its `trace_id` in `events[]` order;
3. the events of traces with no run record yet (a run in flight, or one that died), each trace
   behind an anchor "run N: <input> (no run record)".
The `llm.stream.delta` events of one stream fold into one `event` whose payload is
`{"text": <what they built>}`, and `tool_call.delta` events likewise per call. The `tool.call`
events of one step make one `tool_call` entry and its `tool.result` events one `tool_result`
(payload: the raw records), paired by call id. A folded entry keeps its raw records in
`meta["records"]` and their indices in `events[]` in `meta["event_indices"]`.

`context_messages` replays the prompt yachiyo recorded (the format doc: `llm.prompt.assembled`
holds the full prompt), the last one in the slice, then that run's tool calls and results. A
slice without one (only messages) gives the messages in order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import quote, unquote

from .model import ContextMessage, Entry, TapeFile, TapeNotFound

KIND = "yachiyo"
PREVIEW_BYTES = 600
SAFE = "-_.!~*'()"  # what JS encodeURIComponent leaves alone
_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_FOLD = {
    "llm.stream.delta": "text",
    "tool_call.delta": "args",
    "tool.call": "calls",
    "tool.result": "results",
}


def detect(root: Path) -> bool:
    """A yachiyo data dir (or its session store, or the home above it) holds an index.json."""
    return _store(root) is not None


def _store(root: Path) -> Path | None:
    for store in (root / "session-store", root / "data" / "session-store"):
        if store.is_dir():
            return store
    is_store = (root / "index.json").is_file() and (root / "sessions").is_dir()
    return root if is_store or root.name == "session-store" and root.is_dir() else None


def discover(root: Path) -> list[TapeFile]:
    """Every session of index.json, then every session file the index does not list."""
    store = _store(root)
    if store is None:
        return []
    index, problem = _read_index(store / "index.json")
    found, seen = [], set()
    for sid, summary in index.items():
        path = store / "sessions" / (quote(sid, safe=SAFE) + ".json")
        title = summary.get("title") if isinstance(summary, dict) else None
        label = f"{title} · {sid}" if isinstance(title, str) and title else sid
        note = "" if path.is_file() else "listed in index.json but its file is gone (yachiyo answers 404)"
        rel = path.relative_to(root).as_posix()
        found.append(TapeFile(rel, path, sid, label=label, append_only=False, note=note))
        seen.add(path.name)
    # Crash leftovers `*.json.tmp-*` do not end in .json: the glob skips them, as yachiyo's does.
    files = sorted(p for p in (store / "sessions").glob("*.json") if p.name not in seen)
    note = problem or "not listed in index.json: yachiyo's session list does not show it"
    for path in files:
        rel = path.relative_to(root).as_posix()
        found.append(TapeFile(rel, path, unquote(path.stem), append_only=False, note=note))
    return found


def _read_index(path: Path) -> tuple[dict, str]:
    try:
        doc = _loads(path.read_bytes())
    except FileNotFoundError:
        return {}, "no index.json"
    except (OSError, ValueError):
        return {}, "index.json is unreadable (caught half-written?)"
    sessions = doc.get("sessions") if isinstance(doc, dict) else None
    return (sessions, "") if isinstance(sessions, dict) else ({}, "index.json has no sessions object")


def _loads(raw: bytes) -> object:
    # The stdlib parser, not orjson: JS can leave a lone surrogate ("\ud83d") that orjson rejects.
    doc = json.loads(raw.decode("utf-8"))
    return _clean(doc) if _LONE_SURROGATE.search(raw) else doc


def _clean(obj: object) -> object:
    if isinstance(obj, str):
        return obj.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(obj, dict):
        return {_clean(k): _clean(v) for k, v in obj.items()}
    return [_clean(v) for v in obj] if isinstance(obj, list) else obj


def scan(path: Path, start: int = 0, first_pos: int = 1) -> Iterator[Entry]:
    """All entries of the document; `start` and `first_pos` are ignored (always read whole)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise TapeNotFound(str(path)) from exc
    except OSError as exc:
        yield _unreadable(b"", f"cannot read the file: {exc.strerror or exc}")
        return
    try:
        doc = _loads(raw)
    except UnicodeDecodeError:
        yield _unreadable(raw, "invalid UTF-8")
        return
    except ValueError as exc:
        why = "empty file" if not raw.strip() else f"invalid JSON ({exc})"
        yield _unreadable(raw, f"{why}: yachiyo rewrites the whole file, caught half-written?")
        return
    if not isinstance(doc, dict):
        yield _unreadable(raw, "not a session: the document is not a JSON object")
        return
    yield from _flatten(doc)


def read_entries(path: Path, spans: Iterable[tuple[int, int, int]]) -> list[Entry]:
    """The entries at these positions: the document is small, so it is read again whole."""
    wanted = {pos for pos, _, _ in spans}
    return [e for e in scan(path) if e.pos in wanted] if wanted else []


def unfinished_tail(path: Path, offset: int, pos: int) -> Entry | None:
    return None  # rewritten wholesale by an atomic rename: there is no tail


def _unreadable(raw: bytes, problem: str) -> Entry:
    text = raw[:PREVIEW_BYTES].decode("utf-8", errors="replace").rstrip("\n")
    preview = text + ("…" if len(raw) > PREVIEW_BYTES else "")
    return Entry(1, 0, 0, None, "unreadable", readable=False, problem=problem, preview=preview)


def _list(doc: dict, key: str) -> list:
    value = doc.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _obj(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _inner(wrapper: object) -> dict:
    return _obj(_obj(wrapper).get("event"))


def _body(wrapper: object) -> dict:
    return _obj(_inner(wrapper).get("payload"))


def _flatten(doc: dict) -> Iterator[Entry]:
    messages, events, runs = _list(doc, "messages"), _list(doc, "events"), _list(doc, "runs")
    rows: list[dict] = []
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m.get("role"), str) else ""
        meta = {"message_index": i, "id": m.get("id"), "trace_id": m.get("trace_id")}
        rows.append(dict(kind="message", name=role, date=_date(m), payload=m, meta=meta))
    traces: dict[object, list[int]] = {}
    for i, w in enumerate(events):
        traces.setdefault(_inner(w).get("trace_id"), []).append(i)
    failed = {_body(w).get("call_id") for w in events if _body(w).get("error") is True}
    for n, run in enumerate(runs, 1):
        state = run.get("state")
        meta = {"run_index": n - 1, "id": run.get("id"), "trace_id": run.get("trace_id"), "state": state}
        name = f"run {n}: {_snippet(run.get('input'))}"
        bad = isinstance(state, str) and state != "DONE"
        rows.append(dict(kind="anchor", name=name, date=_date(run), payload=run, meta=meta, is_error=bad))
        rows += _events(events, traces.pop(run.get("trace_id"), []), failed)
    for n, (trace, idxs) in enumerate(traces.items(), len(runs) + 1):
        plan = next((_body(events[i]) for i in idxs if _inner(events[i]).get("event") == "plan"), {})
        name = f"run {n}: {_snippet(plan.get('input'))} (no run record)"
        meta = {"trace_id": trace, "state": None}
        rows.append(dict(kind="anchor", name=name, date=_date(events[idxs[0]]), payload={}, meta=meta))
        rows += _events(events, idxs, failed)
    for pos, row in enumerate(rows, 1):
        anchor = row["kind"] == "anchor"
        context = row["kind"] in ("message", "tool_call", "tool_result")
        yield Entry(pos, pos - 1, 0, None, **row, context=context, phase=anchor)


def _events(events: list[dict], idxs: list[int], failed: set) -> list[dict]:
    groups: dict[tuple, list[int]] = {}
    streams = 0
    for i in idxs:
        ev = _inner(events[i])
        streams += ev.get("event") == "llm.stream.start"
        what = _FOLD.get(ev.get("event"), "one")
        if what == "one":
            key: tuple = (what, i)
        elif what in ("calls", "results"):
            key = (what, ev.get("step_index"))
        else:  # the deltas of one stream, per call for tool arguments
            body = _body(events[i])
            key = (what, streams, body.get("call_id") or body.get("index") if what == "args" else None)
        groups.setdefault(key, []).append(i)
    return [_group(key[0], [events[i] for i in group], group, failed) for key, group in groups.items()]


def _group(what: str, records: list[dict], idxs: list[int], failed: set) -> dict:
    first, bodies = _inner(records[0]), [_body(w) for w in records]
    name = first.get("event") if isinstance(first.get("event"), str) else ""
    meta = {"trace_id": first.get("trace_id"), "step_index": first.get("step_index")}
    row = dict(kind="event", name=name, date=_date(records[0]), meta=meta)
    if what == "one":
        call = bodies[0].get("call_id")
        last = name.rsplit(".", 1)[-1]
        # A failed call has both an erroring tool.result and a tool.error: count it once.
        error = "error" in last and not (name == "tool.error" and call in failed)
        meta.update(event_index=idxs[0], seq=first.get("seq"))
        return row | dict(payload=records[0], is_error=error)
    meta.update(
        event_indices=idxs, records=records, folded=len(records), call_ids=[b.get("call_id") for b in bodies]
    )
    if what == "text":
        return row | dict(payload={"text": "".join(_str(b.get("delta")) for b in bodies)})
    if what == "args":
        text = "".join(_str(b.get("args_delta")) for b in bodies)
        return row | dict(
            payload={"call_id": bodies[0].get("call_id"), "name": bodies[0].get("name"), "text": text}
        )
    names = ", ".join(_str(b.get("name")) or "?" for b in bodies)
    if what == "calls":
        return row | dict(kind="tool_call", name=names, payload=records)
    error = any(_result_error(b) for b in bodies)
    return row | dict(kind="tool_result", name=names, payload=records, is_error=error)


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _snippet(text: object, limit: int = 48) -> str:
    line = " ".join(_str(text).split())
    return line[:limit] + ("…" if len(line) > limit else "")


def _date(record: dict) -> datetime | None:
    stamp = record.get("created_at")
    try:
        parsed = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        return None
    return parsed.astimezone() if parsed and parsed.tzinfo is None else parsed


def _decode(result: object) -> object:
    """A tool result is a JSON string; its value, or the string when it does not parse."""
    try:
        return json.loads(result) if isinstance(result, str) else result
    except ValueError:
        return result


def _result_error(body: dict) -> bool:
    decoded = _decode(body.get("result"))
    return body.get("error") is True or (isinstance(decoded, dict) and decoded.get("ok") is False)


def session_label(tape_name: str, entry: Entry) -> str | None:
    """yachiyo's own title rule: the first user message, trimmed, cut to 40 characters."""
    if entry.kind != "message" or entry.name != "user" or not isinstance(entry.payload, dict):
        return None
    return _str(entry.payload.get("content")).strip()[:40] or None


def _bodies(entry: Entry) -> list[dict]:
    return [_body(w) for w in entry.payload] if isinstance(entry.payload, list) else []


def tool_calls(entry: Entry) -> list[dict]:
    return [
        {"id": b.get("call_id"), "name": _str(b.get("name")) or "?", "arguments": b.get("args")}
        for b in _bodies(entry)
    ]


def tool_results(entry: Entry) -> list[dict]:
    """Results with their call ids; `content` is the decoded JSON of yachiyo's result string."""
    return [
        {"call_id": b.get("call_id"), "content": _decode(b.get("result")), "is_error": _result_error(b)}
        for b in _bodies(entry)
    ]


def context_messages(entries: Iterable[Entry]) -> list[ContextMessage]:
    entries = [e for e in entries if e.readable]
    prompts = [i for i, e in enumerate(entries) if e.kind == "event" and e.name == "llm.prompt.assembled"]
    if not prompts:
        return [
            ContextMessage(e.name, e.payload.get("content"), e.pos) for e in entries if e.kind == "message"
        ]
    prompt = entries[prompts[-1]]
    recorded = _body(prompt.payload).get("messages")
    out = [
        ContextMessage(_str(_obj(m).get("role")), _obj(m).get("content"), prompt.pos)
        for m in (recorded if isinstance(recorded, list) else [])
    ]
    # Then the run's loop: an assistant turn with the calls, one tool message per result string.
    for e in entries[prompts[-1] + 1 :]:
        if e.meta.get("trace_id") != prompt.meta.get("trace_id"):
            continue
        if e.kind == "tool_call":
            calls = [{"id": c["id"], "type": "function", "function": _function(c)} for c in tool_calls(e)]
            out.append(ContextMessage("assistant", "", e.pos, tool_calls=calls))
        elif e.kind == "tool_result":
            out += [
                ContextMessage(
                    "tool", _str(b.get("result")), e.pos, tool_call_id=b.get("call_id"), name=b.get("name")
                )
                for b in _bodies(e)
            ]
    return out


def _function(call: dict) -> dict:
    args = call["arguments"]
    return {"name": call["name"], "arguments": args if isinstance(args, str) else json.dumps(args)}
