"""The compiled fast lane (tapes/_lane.c) held to the Python lane's rules (tapes.fastlane): it may
leave any line to the full path, but a line it takes is one fastlane counts as plain, recorded and
counted exactly as fastlane would. `plain` is fastlane's per-line decision written out again (and
checked against fastlane itself); the checks take a Lane class, so a deliberately broken build of
_lane.c can be run through them too."""

from __future__ import annotations

import json
from array import array
from collections import Counter
from datetime import datetime
from types import SimpleNamespace
from typing import NamedTuple

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapeview.sources import bub_lines
from tapeview.sources.model import SCAN_PARSE_LIMIT
from tapeview.sources.python_json import count, dumps, reports_usage
from tapeview.tapes import blocklane, fastlane, packing
from tapeview.tapes.models import state_preview
from tapeview.tapes.phase_tally import model_of
from tests.conftest import FIXTURES

PLAIN_KINDS = ("message", "tool_call", "tool_result", "event", "system")
LANE_KINDS = (*PLAIN_KINDS, "error")  # an error line: only once the tape has overflowed
MODEL_EVENTS = ("run", "loop.start", "model_switch")
IN_CONTEXT, OUT_OF_CONTEXT = 13, 9
LANE = blocklane.native.Lane if blocklane.native is not None else None


class Taken(NamedTuple):
    """What fastlane records of a plain line, and what it counts of it."""

    id: int
    kind: str
    name: str
    date: int  # micros
    flags: int
    calls: int
    role: str | None  # counted into the phase's roles
    model: str | None  # the model it names
    usage: tuple[int, int, int] | None  # total, prompt, cached tokens (python_json.count)


def plain(raw: bytes, labels: bool, errors: bool = False) -> Taken | None:
    """fastlane.index_lines' reading of one line (its bytes without the newline), with a phase
    started and `run.wants_label() == labels`: None where it hands the line to the full path.
    With `errors` (the tape has overflowed), also an error as the full path counts it."""
    taken = _plain(raw, labels)
    return error_read(raw, labels) if taken is None and errors else taken


def error_read(raw: bytes, labels: bool) -> Taken | None:
    """What the full path (sources.bub_lines, index._account, PhaseTally.add) counts of an error
    line the lane may take; None for any other line."""
    e = bub_lines.parse_line(raw + b"\n", 1, 0)
    if (
        not (e.readable and e.is_error and e.id is not None and e.date is not None)
        or e.kind not in LANE_KINDS
    ):
        return None
    if e.name == "loop.result" or (labels and (e.kind == "message" or e.name == "loop.start")):
        return None
    flags = packing.flags(True, True, e.context, True)
    usage = None if e.prompt_tokens is None else (e.tokens, e.prompt_tokens, e.cached_tokens)
    return Taken(e.id, e.kind, e.name, packing.micros(e.date), flags, 0, None, model_of(e) or None, usage)


def _plain(raw: bytes, labels: bool) -> Taken | None:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    eid, kind, payload, date = obj.get("id"), obj.get("kind"), obj.get("payload"), obj.get("date")
    if not (type(eid) is int and type(kind) is str and kind in PLAIN_KINDS and eid < 2**63):
        return None
    if type(payload) is not dict or type(date) is not str:
        return None
    calls, name, data = 0, "", None
    if kind == "message":
        role = payload.get("role")
        name = role if type(role) is str else ""
        if labels:
            return None
    elif kind == "tool_call":
        found = payload.get("calls")
        calls = len(found) if type(found) is list else 0
    elif kind == "tool_result":
        results = payload.get("results")
        if type(results) is list and any(type(r) is dict and "message" in r and "kind" in r for r in results):
            return None
    elif kind == "event":
        name = payload.get("name")
        name = name if type(name) is str else ""
        data = payload.get("data")
        data = data if type(data) is dict else {}
        if name.endswith(".error") or data.get("status") == "error":
            return None
        if (name == "loop.result" and data.get("error")) or (name == "loop.start" and labels):
            return None
    try:
        when = datetime.fromisoformat(date)
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    meta = obj.get("meta")
    flags = OUT_OF_CONTEXT if type(meta) is dict and meta.get("context") is False else IN_CONTEXT
    model = usage = None
    if data and name in MODEL_EVENTS:
        found_model = data.get("model")
        model = found_model if type(found_model) is str and found_model else None
        used = data.get("usage") if name == "run" else None
        if reports_usage(used):
            details = used.get("prompt_tokens_details")
            cached = count(details.get("cached_tokens")) if type(details) is dict else 0
            usage = (count(used.get("total_tokens")), count(used.get("prompt_tokens")), cached)
    role = name if kind == "message" and name else None
    micros = round(when.timestamp() * 1_000_000)
    return Taken(eid, kind, name, micros, flags, calls, role, model, usage)


def fastlane_reads(raw: bytes, labels: bool) -> Taken | None:
    """What fastlane.index_lines itself does with the line, for a run that records it."""
    phase = SimpleNamespace(end_pos=0, entries=0, started_at=None, ended_at=None, tool_calls=0, roles={})
    phase.model = phase.prompt_tokens = phase.completion_tokens = phase.cached_tokens = None
    tape = SimpleNamespace(entries=0, entries_since_anchor=0, last_id=None, first_at=None, last_at=None)
    tape.model = tape.tokens = tape.last_prompt_tokens = tape.last_cached_tokens = None
    handed = []
    run = SimpleNamespace(tape=tape, tally=SimpleNamespace(current=phase), rows=packing.Batch(), size=99)
    run.full, run.flush, run.wants_label = lambda *line: handed.append(line), None, lambda: labels
    # An anchor is no plain line (fastlane.anchor counts it beside the lane, which leaves it): handed.
    lean, fastlane.anchor = fastlane.anchor, lambda *line: False
    try:
        fastlane.index_lines(run, [(1, 0, raw)])
    finally:
        fastlane.anchor = lean
    if handed:
        return None
    b = run.rows
    usage = None if tape.tokens is None else (tape.tokens, phase.prompt_tokens, phase.cached_tokens)
    role = next(iter(phase.roles), None)
    return Taken(
        b.entry_id[0], b.kind[0], b.name[0], b.date[0], b.flags[0], phase.tool_calls, role, tape.model, usage
    )


def anchor_reads(raw: bytes) -> tuple | None:
    """What fastlane.anchor reads of an anchor line, as it hands it to fastlane.count_anchor (length, id,
    name, date as text, micros, context flag, state written out, its preview); None where it leaves
    the line to the full path."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    got = []
    counts, fastlane.count_anchor = fastlane.count_anchor, lambda run, *args: got.append(args)
    try:
        took = fastlane.anchor(None, 1, 0, raw, obj)
    finally:
        fastlane.count_anchor = counts
    if not took:
        return None
    _, _, length, eid, name, when, date, context, state = got[0]
    return length, eid, name, when.isoformat(), date, context, dumps(state), state_preview(state)


def lane_anchor(lane: object, data: bytes, at: int) -> tuple:
    """The anchor Lane.take() stopped at (from byte `at`), as blocklane counts it, in anchor_reads' terms."""
    stop, eid, name, when, date, context, state, state_end = lane.anchor()
    assert lane.anchor() is None  # given once
    state = orjson.loads(data[state:state_end]) if state >= 0 else None
    when_text = when.isoformat()
    return (
        stop - at,
        eid,
        name,
        when_text,
        date,
        context * packing.CONTEXT,
        dumps(state),
        state_preview(state),
    )


def truncated(t: Taken | None) -> Taken | None:
    """As fastlane keeps them: roles to 40 characters, models to 200."""
    if t is None:
        return None
    return t._replace(role=t.role and t.role[:40], model=t.model and t.model[:200])


# ---- running a Lane over a block, as blocklane.index_lines does, and checking what it took ----


def drained(lane: object) -> list[tuple]:
    """The lane's columns as rows (pos, offset, length, id, date, kind, name, flags)."""
    pos, offset, length, ids, dates, kinds, names, flags = lane.drain()
    columns = [array("i", pos), array("q", offset), array("q", length), array("q", ids), array("q", dates)]
    kinds = [blocklane.native.KINDS[k] for k in kinds]
    names = [lane.names[n] for n in array("H", names)]
    return list(zip(*columns, kinds, names, flags, strict=True))


def counts(taken: list[tuple[int, int, bytes, Taken]]) -> tuple | None:
    """What Lane.settle() must give for these taken lines (pos, offset, raw, record)."""
    if not taken:
        return None
    pos, offset, raw, last = taken[-1]
    records = [t for *_, t in taken]
    dates = [t.date for t in records]
    usages = [t.usage for t in records if t.usage is not None]
    prompted = [u for u in usages if u[1]]
    usage = usages and (
        len(usages),
        sum(u[0] for u in usages),
        sum(u[1] for u in usages),
        sum(max(0, u[0] - u[1]) for u in usages),
        sum(u[2] for u in usages),
        prompted[-1][1] if prompted else None,
        prompted[-1][2] if prompted else None,
        usages[-1][1],
    )
    models = [t.model for t in records if t.model]
    return (
        len(records),
        packing.from_micros(min(dates)),
        packing.from_micros(max(dates)),
        sum(t.calls for t in records),
        (pos, last.id, offset + len(raw) + 1),
        dict(Counter(t.role for t in records if t.role)),
        usage or None,
        models[-1] if models else None,
        sum(1 for t in records if t.flags & packing.ERROR),
        None,  # Bub 0.5.1 lines report no cost of their own
    )


def settled(lane: object) -> tuple | None:
    found = lane.settle()
    if found is None or found[6] is None or found[6][5] is not None:
        return found
    usage = found[6][:6] + (None,) + found[6][7:]  # no last prompt: its cached count means nothing
    return found[:6] + (usage,) + found[7:]


def check_block(
    lane_type: type,
    data: bytes,
    labels: bool,
    room: int = 1 << 20,
    pos: int = 1,
    offset: int = 0,
    errors: bool = False,
    anchors: list[bytes] | None = None,
) -> int:
    """Feed whole lines through Lane.take as blocklane does (a declined line, or an anchor it read,
    is stepped over by hand) and assert the rule on every line taken and every anchor read (those
    go into `anchors`); return how many lines it took."""
    anchors = [] if anchors is None else anchors
    lines, at = {}, 0
    for i, raw in enumerate(data.split(b"\n")[:-1]):
        lines[at] = (pos + i, at, raw)
        at += len(raw) + 1
    by_pos = {p: (p, a, raw) for p, a, raw in lines.values()}
    lane, at, total = lane_type(), 0, 0
    while at < len(data):
        before, first = at, pos
        at, pos, stopped = lane.take(data, at, pos, offset, room, labels, errors)
        taken = []
        for row in drained(lane):
            line_pos, line_at, raw = by_pos[row[0]]
            assert row[1:3] == (offset + line_at, len(raw) + 1), raw
            assert before <= line_at < at, raw
            want = plain(raw, labels, errors)
            assert want is not None, f"took a line fastlane hands to the full path: {raw!r}"
            assert row[3:] == (want.id, want.date, want.kind, want.name, want.flags), raw
            taken.append((line_pos, offset + line_at, raw, want))
        assert settled(lane) == counts(taken), [t[2] for t in taken]
        left = [raw for p, a, raw in lines.values() if before <= a < at and p not in {t[0] for t in taken}]
        assert all(not raw.strip() for raw in left), left  # passed over: blank lines only
        assert pos == first + sum(1 for a in lines if before <= a < at)
        total += len(taken)
        assert len(taken) <= room
        if stopped == blocklane.FULL:
            assert len(taken) == room
        elif stopped in (blocklane.DECLINED, blocklane.ANCHOR):
            assert at in lines and lines[at][0] == pos
            raw = lines[at][2]
            assert raw.strip() or len(raw) + 1 > SCAN_PARSE_LIMIT
            if stopped == blocklane.ANCHOR:
                assert lane_anchor(lane, data, at) == anchor_reads(raw), raw
                anchors.append(raw)
            else:
                assert lane.anchor() is None
            at, pos = at + len(raw) + 1, pos + 1
        else:
            assert (stopped, at) == (0, len(data))
    return total


def check_line(lane_type: type, raw: bytes, labels: bool, errors: bool = False) -> bool:
    """The rule for one line (without its newline); whether the lane took it."""
    return check_block(lane_type, raw + b"\n", labels, pos=5, offset=1000, errors=errors) > 0


# ---- hostile lines --------------------------------------------------------------------------

D = b'"2026-11-22T01:37:38.953896+00:00"'


def line(
    kind: bytes = b'"message"', payload: bytes = b'{"role": "user", "content": "hi"}', **more: bytes | None
) -> bytes:
    parts = {"id": b"7", "kind": kind, "payload": payload, "meta": b"{}", "date": D, **more}
    return b"{" + b", ".join(b'"%s": %s' % (k.encode(), v) for k, v in parts.items() if v is not None) + b"}"


def event(name: bytes, data: bytes = b"{}", **more: bytes | None) -> bytes:
    return line(b'"event"', b'{"name": %s, "data": %s}' % (name, data), **more)


def dated(date: str) -> bytes:
    return line(date=json.dumps(date).encode())


def run(usage: bytes, model: bytes = b'"gpt-4o"') -> bytes:
    return event(b'"run"', b'{"model": %s, "usage": %s, "elapsed_ms": 120}' % (model, usage))


def content(text: bytes) -> bytes:
    return line(payload=b'{"role": "user", "content": "%s"}' % text)


def result(results: bytes) -> bytes:
    return line(b'"tool_result"', b'{"results": %s}' % results)


def nested(depth: int) -> bytes:
    return line(payload=b'{"role": "user", "content": %s}' % (b"[" * depth + b"]" * depth))


USAGE = b'{"total_tokens": 30, "prompt_tokens": 20, "prompt_tokens_details": {"cached_tokens": 5}}'
# (case, line, labels, the lane must take it: a line in the form Bub writes)
TAKE, EITHER = True, False
CASES = [
    ("message", line(), False, TAKE),
    ("message-wanted-label", line(), True, EITHER),
    ("role-not-a-string", line(payload=b'{"role": 5}'), False, TAKE),
    ("role-escaped-value", line(payload=b'{"role": "us\\u0065r"}'), False, EITHER),
    ("role-non-ascii", line(payload='{"role": "rôle-😀"}'.encode()), False, TAKE),
    ("role-long", line(payload=b'{"role": "%s"}' % (b"r" * 60)), False, TAKE),
    ("system", line(b'"system"', b'{"content": "s"}'), True, TAKE),
    ("whitespace", b' \t{ "id" :7 ,\t"kind":"system","payload" : { } , "date" :%s }\t \r' % D, False, TAKE),
    ("crlf", line() + b"\r", False, TAKE),
    ("key-id-escaped", line().replace(b'"id"', b'"\\u0069d"'), False, EITHER),
    ("key-kind-escaped", line().replace(b'"kind"', b'"k\\u0069nd"'), False, EITHER),
    ("key-date-escaped", line().replace(b'"date"', b'"\\u0064ate"'), False, EITHER),
    ("key-role-escaped", line(payload=b'{"r\\u006fle": "user"}'), False, EITHER),
    ("key-payload-slash", line().replace(b'"payload"', b'"pay\\/load"'), False, EITHER),
    ("key-name-escaped", line(b'"event"', b'{"n\\u0061me": "x.error"}'), False, EITHER),
    ("key-status-escaped", event(b'"e"', b'{"st\\u0061tus": "error"}'), False, EITHER),
    ("key-model-escaped", event(b'"run"', b'{"m\\u006fdel": "m"}'), False, EITHER),
    ("key-usage-escaped", event(b'"run"', b'{"us\\u0061ge": %s}' % USAGE), False, EITHER),
    ("key-tokens-escaped", run(b'{"total_t\\u006fkens": 30}'), False, EITHER),
    ("key-context-escaped", line(meta=b'{"c\\u006fntext": false}'), False, EITHER),
    ("key-message-escaped", result(b'[{"m\\u0065ssage": "boom", "kind": "error"}]'), False, EITHER),
    ("key-result-kind-escaped", result(b'[{"message": "boom", "k\\u0069nd": "error"}]'), False, EITHER),
    ("kind-escaped", line(b'"m\\u0065ssage"'), False, EITHER),
    ("status-escaped", event(b'"e"', b'{"status": "\\u0065rror"}'), False, EITHER),
    ("name-escaped-error", event(b'"x\\u002eerror"'), False, EITHER),
    ("model-escaped", event(b'"model_switch"', b'{"model": "gpt\\u002d4"}'), False, EITHER),
    ("date-escaped", line(date=b'"2026\\u002d11-22T01:37:38Z"'), False, EITHER),
    ("dup-id", line(id=b"1").replace(b'"date"', b'"id": 2, "date"'), False, EITHER),
    ("dup-kind", line(b'"anchor"').replace(b'"date"', b'"kind": "system", "date"'), False, EITHER),
    ("dup-kind-back", line().replace(b'"date"', b'"kind": "anchor", "date"'), False, EITHER),
    ("dup-payload", line().replace(b'"date"', b'"payload": [], "date"'), False, EITHER),
    ("dup-date", line().replace(b'"meta"', b'"date": "no", "meta"'), False, EITHER),
    ("dup-meta", line(meta=b'{"context": false}').replace(b'"date"', b'"meta": {}, "date"'), False, EITHER),
    ("dup-role", line(payload=b'{"role": "user", "role": "assistant"}'), False, EITHER),
    ("dup-calls", line(b'"tool_call"', b'{"calls": [1, 2], "calls": [1]}'), False, EITHER),
    ("dup-results", result(b'[], "results": [{"message": "m", "kind": "k"}]'), False, EITHER),
    ("dup-results-back", result(b'[{"message": "m", "kind": "k"}], "results": []'), False, EITHER),
    ("dup-name", event(b'"e"').replace(b'"data"', b'"name": "x.error", "data"'), False, EITHER),
    ("dup-data", event(b'"e"', b'{"status": "error"}, "data": {}'), False, EITHER),
    ("dup-data-back", event(b'"e"', b'{}, "data": {"status": "error"}'), False, EITHER),
    ("dup-status", event(b'"e"', b'{"status": "ok", "status": "error"}'), False, EITHER),
    ("dup-model", event(b'"model_switch"', b'{"model": "a", "model": "b"}'), False, EITHER),
    ("dup-usage", run(USAGE + b', "usage": {}'), False, EITHER),
    ("dup-tokens", run(b'{"total_tokens": 30, "total_tokens": 40}'), False, EITHER),
    (
        "dup-details",
        run(b'{"prompt_tokens_details": {}, "prompt_tokens_details": {"cached_tokens": 9}}'),
        False,
        EITHER,
    ),
    (
        "dup-cached",
        run(b'{"prompt_tokens_details": {"cached_tokens": 1, "cached_tokens": 9}}'),
        False,
        EITHER,
    ),
    ("dup-context", line(meta=b'{"context": false, "context": true}'), False, EITHER),
    ("dup-context-back", line(meta=b'{"context": true, "context": false}'), False, EITHER),
    ("dup-result-message", result(b'[{"kind": "k", "message": 1, "message": 2}]'), False, EITHER),
    ("dup-unread-keys", line(payload=b'{"role": "user", "x": {"a": 1, "a": 2}}'), False, TAKE),
    ("surrogate-pair", content(b"\\ud83d\\ude00 \\uDBFF\\uDFFF"), False, TAKE),
    ("surrogate-high-alone", content(b"\\ud83d"), False, EITHER),
    ("surrogate-low-alone", content(b"\\ude00"), False, EITHER),
    ("surrogate-high-high", content(b"\\ud83d\\ud83d"), False, EITHER),
    ("surrogate-high-then-char", content(b"\\ud83d\\u0041"), False, EITHER),
    ("surrogate-in-role", line(payload=b'{"role": "\\ud800"}'), False, EITHER),
    ("nul-escape", content(b"a\\u0000b"), False, TAKE),
    ("escapes", content(b'\\" \\\\ \\/ \\b \\f \\n \\r \\t'), False, TAKE),
    ("escape-unknown", content(b"\\x41"), False, EITHER),
    ("escape-short-hex", content(b"\\u00e"), False, EITHER),
    ("utf8-4-byte", content("😀 \U0010ffff \uffff".encode()), False, TAKE),
    ("utf8-del", content(b"\x7f"), False, TAKE),
    ("utf8-bad-byte", content(b"\xff"), False, EITHER),
    ("utf8-lone-continuation", content(b"\x80"), False, EITHER),
    ("utf8-overlong-2", content(b"\xc0\xaf"), False, EITHER),
    ("utf8-overlong-3", content(b"\xe0\x80\xaf"), False, EITHER),
    ("utf8-overlong-4", content(b"\xf0\x80\x80\xaf"), False, EITHER),
    ("utf8-truncated", content(b"\xe2\x82"), False, EITHER),
    ("utf8-surrogate", content(b"\xed\xa0\x80"), False, EITHER),
    ("utf8-past-10ffff", content(b"\xf4\x90\x80\x80"), False, EITHER),
    ("utf8-f5", content(b"\xf5\x80\x80\x80"), False, EITHER),
    ("utf8-in-key", line(payload=b'{"r\xc3\xb4le": "x", "\xff": 1}'), False, EITHER),
    ("raw-nul", content(b"a\x00b"), False, EITHER),
    ("raw-control", content(b"a\x1fb"), False, EITHER),
    ("raw-tab", content(b"a\tb"), False, EITHER),
    ("trailing-garbage", line() + b" x", False, EITHER),
    ("trailing-brace", line() + b"}", False, EITHER),
    ("trailing-comma", line() + b",", False, EITHER),
    ("two-objects", line() + line(), False, EITHER),
    ("trailing-nul", line() + b"\x00", False, EITHER),
    ("bom", b"\xef\xbb\xbf" + line(), False, EITHER),
    ("leading-form-feed", b"\x0c" + line(), False, EITHER),
    ("vertical-tab-between-members", line().replace(b", ", b",\x0b", 1), False, EITHER),
    ("form-feed-before-colon", line().replace(b'"id":', b'"id"\x0c:'), False, EITHER),
    ("line-of-nul", b"\x00", False, EITHER),
    ("line-of-file-separator", b"\x1c\x1d", False, EITHER),
    ("line-of-nbsp", b"\xc2\xa0\x85", False, EITHER),
    ("not-an-object", b'[{"id": 7}]', False, EITHER),
    ("nan", content(b'", "n": NaN, "x": "'), False, EITHER),
    ("infinity", content(b'", "n": -Infinity, "x": "'), False, EITHER),
    ("exp-huge", content(b'", "n": 1e400, "x": "'), False, EITHER),
    ("exp-tiny", content(b'", "n": 1e-400, "x": "'), False, EITHER),
    ("exp-plain", content(b'", "n": 2.5E+3, "x": "'), False, EITHER),
    ("numbers", content(b'", "n": [-0, -0.0, 0.5, 123456789012345678901234567890], "x": "'), False, TAKE),
    ("int-300-digits", content(b'", "n": %s, "x": "' % (b"9" * 300)), False, TAKE),
    ("int-310-digits", content(b'", "n": %s, "x": "' % (b"9" * 310)), False, EITHER),
    ("number-leading-zero", content(b'", "n": 01, "x": "'), False, EITHER),
    ("number-bare-point", content(b'", "n": 1., "x": "'), False, EITHER),
    ("number-leading-point", content(b'", "n": .5, "x": "'), False, EITHER),
    ("number-bare-minus", content(b'", "n": -, "x": "'), False, EITHER),
    ("number-plus", content(b'", "n": +1, "x": "'), False, EITHER),
    ("id-18-digits", line(id=b"999999999999999999"), False, TAKE),
    ("id-2**63-1", line(id=b"9223372036854775807"), False, EITHER),
    ("id-2**63", line(id=b"9223372036854775808"), False, EITHER),
    ("id-2**64", line(id=b"18446744073709551616"), False, EITHER),
    ("id-20-digits", line(id=b"99999999999999999999"), False, EITHER),
    ("id-negative", line(id=b"-3"), False, TAKE),
    ("id-minus-2**63", line(id=b"-9223372036854775808"), False, EITHER),
    ("id-minus-zero", line(id=b"-0"), False, EITHER),
    ("id-leading-zero", line(id=b"07"), False, EITHER),
    ("id-float", line(id=b"7.0"), False, EITHER),
    ("id-exponent", line(id=b"7e0"), False, EITHER),
    ("id-true", line(id=b"true"), False, EITHER),
    ("id-string", line(id=b'"7"'), False, EITHER),
    ("id-missing", line(id=None), False, EITHER),
    ("kind-list", line(b'["message"]'), False, EITHER),
    ("kind-anchor", line(b'"anchor"'), False, EITHER),
    ("payload-list", line(payload=b"[]"), False, EITHER),
    ("payload-empty", line(payload=b"{}"), False, TAKE),
    ("nesting-150", nested(150), False, TAKE),
    ("nesting-250", nested(250), False, EITHER),
    ("nesting-1100", nested(1100), False, EITHER),
    (
        "nesting-150-in-data",
        event(b'"run"', b'{"usage": {"x": %s}}' % (b"[" * 150 + b"]" * 150)),
        False,
        EITHER,
    ),
    ("meta-false", line(meta=b'{"context": false}'), False, TAKE),
    ("meta-zero", line(meta=b'{"context": 0}'), False, TAKE),
    ("meta-string-false", line(meta=b'{"context": "false"}'), False, TAKE),
    ("meta-null", line(meta=b'{"context": null}'), False, TAKE),
    ("meta-true", line(meta=b'{"context": true}'), False, TAKE),
    ("meta-nested-false", line(meta=b'{"x": {"context": false}}'), False, TAKE),
    ("meta-list", line(meta=b'[{"context": false}]'), False, TAKE),
    ("meta-string", line(meta=b'"context"'), False, TAKE),
    ("meta-missing", line(meta=None), False, TAKE),
    ("meta-null-value", line(meta=b"null"), False, TAKE),
    ("calls-list", line(b'"tool_call"', b'{"calls": [{"id": 1}, [2, 3], "x"]}'), False, TAKE),
    ("calls-string", line(b'"tool_call"', b'{"calls": "abc"}'), False, TAKE),
    ("calls-empty", line(b'"tool_call"', b'{"calls": []}'), False, TAKE),
    ("calls-object", line(b'"tool_call"', b'{"calls": {"a": 1, "b": 2}}'), False, TAKE),
    ("results-ok", result(b'[{"output": "ok", "message": "only"}, "x", 3]'), False, TAKE),
    ("results-error", result(b'[{"output": "ok"}, {"message": "boom", "kind": "error"}]'), False, EITHER),
    ("results-error-null", result(b'[{"message": null, "kind": null}]'), False, EITHER),
    ("results-error-nested", result(b'[[{"message": "boom", "kind": "error"}]]'), False, TAKE),
    ("results-object", result(b'{"message": "boom", "kind": "error"}'), False, TAKE),
    ("results-string", result(b'"message kind"'), False, TAKE),
    ("event-error-name", event(b'"tool.error"'), False, EITHER),
    ("event-error-alone", event(b'".error"'), False, EITHER),
    ("event-error-like", event(b'"x.errors"'), False, TAKE),
    ("event-status-error", event(b'"loop.step"', b'{"status": "error"}'), False, EITHER),
    ("event-status-ok", event(b'"loop.step"', b'{"status": "ok", "error": "x"}'), False, TAKE),
    ("event-status-not-str", event(b'"loop.step"', b'{"status": ["error"]}'), False, TAKE),
    ("loop-result-error", event(b'"loop.result"', b'{"error": "boom"}'), False, EITHER),
    ("loop-result-ok", event(b'"loop.result"', b'{"error": null}'), False, EITHER),
    ("loop-start", event(b'"loop.start"', b'{"model": "openai:gpt-4o-mini"}'), False, TAKE),
    ("loop-start-wanted-label", event(b'"loop.start"', b'{"model": "m"}'), True, EITHER),
    ("model-switch", event(b'"model_switch"', b'{"model": "claude", "usage": %s}' % USAGE), False, TAKE),
    ("model-empty", event(b'"model_switch"', b'{"model": ""}'), False, TAKE),
    ("model-not-str", event(b'"model_switch"', b'{"model": 5}'), False, TAKE),
    ("model-non-ascii", event(b'"model_switch"', '{"model": "modèle-😀"}'.encode()), False, TAKE),
    ("model-long", event(b'"model_switch"', b'{"model": "%s"}' % (b"m" * 300)), False, TAKE),
    ("model-other-event", event(b'"loop.step"', b'{"model": "m", "usage": %s}' % USAGE), False, TAKE),
    ("run", run(USAGE), False, TAKE),
    ("run-no-model", run(USAGE, model=b"null"), False, TAKE),
    ("run-floats", run(b'{"total_tokens": 30.0, "prompt_tokens": 2.5}'), False, TAKE),
    ("run-bools", run(b'{"total_tokens": true, "prompt_tokens": false}'), False, TAKE),
    ("run-negative", run(b'{"total_tokens": -5, "prompt_tokens": 20}'), False, TAKE),
    ("run-2**40", run(b'{"total_tokens": 1099511627776, "prompt_tokens": 1099511627775}'), False, TAKE),
    (
        "run-minus-2**40",
        run(b'{"total_tokens": -1099511627776, "prompt_tokens": -1099511627775}'),
        False,
        TAKE,
    ),
    ("run-2**41", run(b'{"total_tokens": 2199023255552, "prompt_tokens": 1}'), False, TAKE),
    ("run-wide-tokens", run(b'{"total_tokens": 123456789012345678901, "prompt_tokens": -0}'), False, TAKE),
    ("run-tokens-exponent", run(b'{"total_tokens": 3e1}'), False, EITHER),
    (
        "run-no-prompt",
        run(b'{"total_tokens": 30, "prompt_tokens_details": {"cached_tokens": 7}}'),
        False,
        TAKE,
    ),
    ("run-no-details", run(b'{"total_tokens": 30, "prompt_tokens": 20}'), False, TAKE),
    (
        "run-details-list",
        run(b'{"prompt_tokens": 20, "prompt_tokens_details": [{"cached_tokens": 5}]}'),
        False,
        TAKE,
    ),
    ("run-usage-empty", run(b"{}"), False, TAKE),
    ("run-usage-list", run(b"[30]"), False, TAKE),
    ("run-data-empty", event(b'"run"'), False, TAKE),
    ("run-data-list", event(b'"run"', b'[{"model": "m"}]'), False, TAKE),
    ("run-no-data", line(b'"event"', b'{"name": "run"}'), False, TAKE),
    ("event-name-not-str", event(b"5", b'{"model": "m"}'), False, TAKE),
]
DATES = {
    "2026-11-22T01:37:38Z": TAKE,
    "2026-11-22T01:37:38+00:00": TAKE,
    "2026-11-22T01:37:38-00:00": TAKE,
    "2026-11-22T01:37:38.5+05:30": TAKE,
    "2026-11-22T01:37:38.12-23:59": TAKE,
    "2026-11-22T01:37:38.123+23:59": TAKE,
    "2026-11-22T01:37:38.1234Z": TAKE,
    "2026-11-22T01:37:38.12345Z": TAKE,
    "2026-11-22T01:37:38.999999Z": TAKE,
    "2026-11-22 01:37:38Z": TAKE,
    "1900-01-01T00:00:00+05:00": TAKE,
    "1900-01-01T00:00:00Z": TAKE,
    "2100-12-31T23:59:59.999999-05:00": TAKE,
    "2024-02-29T12:00:00Z": TAKE,
    "2000-02-29T12:00:00Z": TAKE,
    "1970-01-01T00:00:00.000001Z": TAKE,
    "1969-12-31T23:59:59.999999Z": TAKE,
    "0001-01-01T00:00:00.000001Z": EITHER,  # far from 1970: the float of timestamp() loses microseconds
    "1000-06-15T12:00:00.123457+01:00": EITHER,
    "9999-12-31T23:59:59.999999Z": EITHER,
    "2026-11-22T01:37:38.1234567Z": EITHER,
    "2026-11-22T01:37:38,5Z": EITHER,
    "2026-11-22T01:37:38.Z": EITHER,
    "2026-11-22T01:37:38+0000": EITHER,
    "2026-11-22T01:37:38+05": EITHER,
    "2026-11-22T01:37:38+05:30:15": EITHER,
    "2026-11-22T01:37:38+24:00": EITHER,
    "2026-11-22T01:37:38+05:60": EITHER,
    "2026-11-22T01:37:38": EITHER,
    "2026-11-22T01:37Z": EITHER,
    "20261122T013738Z": EITHER,
    "2026-11-22x01:37:38Z": EITHER,
    "2026-11-22t01:37:38z": EITHER,
    "2026-11-22T01:37:38Z ": EITHER,
    "1899-12-31T23:59:59Z": EITHER,
    "2101-01-01T00:00:00Z": EITHER,
    "2023-02-29T00:00:00Z": EITHER,
    "1900-02-29T00:00:00Z": EITHER,
    "2100-02-29T00:00:00Z": EITHER,
    "2026-04-31T00:00:00Z": EITHER,
    "2026-13-01T00:00:00Z": EITHER,
    "2026-00-01T00:00:00Z": EITHER,
    "2026-11-00T00:00:00Z": EITHER,
    "2026-11-22T24:00:00Z": EITHER,
    "2026-11-22T23:60:00Z": EITHER,
    "2026-11-22T23:59:60Z": EITHER,
    "２０２６-11-22T01:37:38Z": EITHER,
    "2026-11-22T01:37:3８Z": EITHER,
    "": EITHER,
}
CASES += [(f"date {d!r}", dated(d), False, must) for d, must in DATES.items()]
CASES += [
    ("date-number", line(date=b"1790000000"), False, EITHER),
    ("date-missing", line(date=None), False, EITHER),
]


def anchor(
    name: bytes = b'"phase/implement"', state: bytes | None = b'{"summary": "s"}', **more: bytes | None
) -> bytes:
    state_member = b"" if state is None else b', "state": %s' % state
    return line(b'"anchor"', b'{"name": %s%s}' % (name, state_member), **more)


READ = True  # an anchor in the form Bub writes: the lane must read it (EITHER: it may leave it)
ANCHORS = [
    ("bub", anchor(), READ),
    ("no-state", anchor(state=None), READ),
    *[
        (f"state {state!r}", anchor(state=state), READ)
        for state in (b"null", b"{}", b"[]", b'""', b"0", b"false")
    ],
    *[(f"state {state!r}", anchor(state=state), READ) for state in (b'"s"', b"[1, -0.0, 1.5, true]", b"-7")],
    ("state-spaced", anchor(state=b'{ "a" :\t[ 1 ,{"b" : null} ] , "c":"d" }'), READ),
    ("state-non-ascii", anchor(state='{"s": "é😀\u4e2d"}'.encode()), READ),
    ("state-escapes", anchor(state=b'{"s": "\\u00e9\\n\\t\\"\\\\\\/\\ud83d\\ude00"}'), READ),
    ("state-key-escaped", anchor(state=b'{"\\u0073ummary": "s"}'), READ),
    ("state-nul", anchor(state=b'{"s": "a\\u0000b"}'), READ),
    ("state-long", anchor(state=b'{"s": "%s"}' % (b"x" * 500)), READ),
    ("state-deep", anchor(state=b"[" * 150 + b"]" * 150), READ),
    ("state-too-deep", anchor(state=b"[" * 300 + b"]" * 300), EITHER),
    ("state-lone-surrogate", anchor(state=b'"\\ud800"'), EITHER),
    ("state-exponent", anchor(state=b"1e5"), EITHER),
    ("state-wide-int", anchor(state=b"%d" % 2**64), EITHER),
    ("state-int-63", anchor(state=b"%d" % (2**63 - 1)), EITHER),
    ("state-digits-in-text", anchor(state=b'"%s"' % (b"1" * 25)), EITHER),
    ("state-twice", line(b'"anchor"', b'{"name": "phase/a", "state": 1, "state": 2}'), EITHER),
    ("state-nan", anchor(state=b"NaN"), EITHER),
    ("name-non-ascii", anchor(name='"phase/é😀"'.encode()), READ),
    ("name-long", anchor(name=b'"phase/%s"' % (b"n" * 400)), READ),
    ("name-empty", anchor(name=b'""'), READ),
    ("name-memory", anchor(name=b'"memory/saved"'), READ),
    ("name-spill", anchor(name=b'"spill/x"'), READ),
    ("name-overflow", anchor(name=b'"auto_handoff/context_overflow"'), READ),
    ("name-escaped", anchor(name=b'"phase\\/x"'), EITHER),
    ("name-escaped-memory", anchor(name=b'"\\u006demory/x"'), EITHER),
    ("name-number", anchor(name=b"5"), EITHER),
    ("name-null", anchor(name=b"null"), EITHER),
    ("name-missing", line(b'"anchor"', b'{"state": {}}'), EITHER),
    ("name-twice", line(b'"anchor"', b'{"name": "phase/a", "name": "memory/b"}'), EITHER),
    ("payload-list", line(b'"anchor"', b'["phase/a"]'), EITHER),
    ("payload-null", line(b'"anchor"', b"null"), EITHER),
    ("kind-escaped", line(b'"anch\\u006fr"', b'{"name": "phase/a"}'), EITHER),
    ("kind-twice", anchor().replace(b'"kind": "anchor"', b'"kind": "message", "kind": "anchor"'), EITHER),
    ("context-false", anchor(meta=b'{"context": false}'), READ),
    ("context-true", anchor(meta=b'{"context": true}'), READ),
    ("context-string", anchor(meta=b'{"context": "false"}'), READ),
    ("context-zero", anchor(meta=b'{"context": 0}'), READ),
    ("meta-null", anchor(meta=b"null"), READ),
    ("meta-list", anchor(meta=b"[false]"), READ),
    ("meta-missing", anchor(meta=None), READ),
    ("context-twice", anchor(meta=b'{"context": false, "context": true}'), EITHER),
    ("id-negative", anchor(id=b"-5"), READ),
    ("id-zero", anchor(id=b"-0"), READ),
    ("id-18-digits", anchor(id=b"9" * 18), READ),
    ("id-63-bits", anchor(id=b"%d" % (2**63 - 1)), EITHER),
    ("id-64-bits", anchor(id=b"%d" % 2**63), EITHER),
    ("id-float", anchor(id=b"7.0"), EITHER),
    ("id-string", anchor(id=b'"7"'), EITHER),
    ("id-missing", anchor(id=None), EITHER),
    (
        "whitespace",
        b' {"date":%s ,"id":7,"meta":{},"payload":{ "state" :1,"name":"p"},"kind":"anchor"}\r' % D,
        READ,
    ),
    ("extra-members", anchor(more=b'{"x": [1, {"y": 2}]}'), READ),
    ("invalid-after", anchor() + b" x", EITHER),
    ("not-utf8", anchor(state=b'"\xff"'), EITHER),
]
ZONES = {"Z": READ, "+00:00": READ, "-00:00": READ, "+05:30": EITHER, "-01:00": EITHER, "": EITHER}
FORMS = {"2026-11-22T01:37:38.953896": READ, "2026-11-22 01:37:38": READ, "2026-11-22T01:37:38.5": READ}
FORMS |= {"2026-11-22T01:37:38.1234567": EITHER, "2026-02-29T01:37:38": EITHER, "1899-12-31T23:59:59": EITHER}
FORMS |= {"2100-12-31T23:59:59.999999": READ, "1900-01-01T00:00:00": READ, "2024-02-29T12:00:00": READ}
ANCHORS += [
    (f"date {form}{zone}", anchor(date=json.dumps(form + zone).encode()), must and must_zone)
    for form, must in FORMS.items()
    for zone, must_zone in ZONES.items()
]
ANCHORS += [
    ("date-escaped", anchor(date=b'"2026-11-22T01:37:38\\u002b00:00"'), EITHER),
    ("date-number", anchor(date=b"1790000000"), EITHER),
    ("date-missing", anchor(date=None), EITHER),
    ("date-lowercase-z", anchor(date=b'"2026-11-22t01:37:38z"'), EITHER),
]
CASES += [(f"anchor {case}", raw, False, EITHER) for case, raw, _ in ANCHORS]
PARAMS = [pytest.param(raw, labels, must, id=case) for case, raw, labels, must in CASES]
# Every line of the sample tapes, for the lane to take wherever fastlane counts it as plain.
SAMPLES = [
    raw for path in sorted((FIXTURES / "bub").rglob("*.jsonl*")) for raw in path.read_bytes().split(b"\n")
]


def test_the_compiled_lane_is_built_and_names_the_kinds_as_packing_does() -> None:
    assert blocklane.native is not None, "tapeview/tapes/_lane.c is not built (pip install -e .)"
    assert blocklane.native.KINDS == packing.LANE_KINDS == LANE_KINDS
    assert set(PLAIN_KINDS) == fastlane.PLAIN_KINDS


@pytest.mark.parametrize(("raw", "labels", "must_take"), PARAMS)
def test_the_lane_takes_a_hostile_line_only_as_fastlane_counts_it(
    raw: bytes, labels: bool, must_take: bool
) -> None:
    assert truncated(plain(raw, labels)) == fastlane_reads(raw, labels)  # the oracle is fastlane's reading
    took = check_line(LANE, raw, labels)
    assert took or not must_take, "the lane leaves a plain line of the form Bub writes"
    assert check_line(LANE, raw, labels, errors=True) or not must_take


def model_switches(lines: list[bytes], labels: bool, errors: bool) -> int:
    """The plain lines the lane leaves to fastlane because they name another model than the one
    whose usage it is counting (each model's tokens are priced as its own, tapes.costs)."""
    model, usages, left = None, 0, 0
    for raw in lines:
        if plain(raw, labels, errors) is None or anchor_reads(raw) is not None:
            model, usages = None, 0  # the lane stops there: its counts are settled
            continue
        obj = orjson.loads(raw)
        data = obj["payload"].get("data") if obj["kind"] == "event" else None
        named = (
            data.get("model")
            if isinstance(data, dict) and obj["payload"].get("name") in MODEL_EVENTS
            else None
        )
        named = named if isinstance(named, str) and named else None
        if named is not None and named != model and usages:
            model, usages, left = None, 0, left + 1
            continue
        model = named or model
        usages += (
            isinstance(data, dict)
            and obj["payload"].get("name") == "run"
            and reports_usage(data.get("usage"))
        )
    return left


@pytest.mark.parametrize("errors", [False, True], ids=["not-overflowed", "overflowed"])
def test_the_lane_takes_every_plain_line_of_the_sample_tapes(errors: bool) -> None:
    for labels in (False, True):
        for raw in SAMPLES:
            assert truncated(plain(raw, labels)) == (fastlane_reads(raw, labels) if raw.strip() else None)
            assert check_line(LANE, raw, labels, errors) == (plain(raw, labels, errors) is not None), raw
        read: list[bytes] = []
        assert check_block(LANE, b"\n".join(SAMPLES) + b"\n", labels, errors=errors, anchors=read) == sum(
            plain(raw, labels, errors) is not None for raw in SAMPLES
        ) - model_switches(SAMPLES, labels, errors)
        assert read == [raw for raw in SAMPLES if anchor_reads(raw) is not None]


@pytest.mark.parametrize(
    ("raw", "must_read"), [pytest.param(raw, must, id=case) for case, raw, must in ANCHORS]
)
def test_the_lane_reads_an_anchor_only_as_fastlane_does(raw: bytes, must_read: bool) -> None:
    assert anchor_reads(raw) is not None or not must_read, "fastlane.anchor leaves it: no case for the lane"
    for labels in (False, True):
        for errors in (False, True):
            read: list[bytes] = []
            assert check_block(LANE, raw + b"\n", labels, pos=9, offset=333, errors=errors, anchors=read) == 0
            assert read == [raw] or not must_read, "the lane leaves an anchor in the form Bub writes"


def test_the_lane_reads_an_anchor_in_a_block_and_goes_on() -> None:
    block = [
        line(),
        anchor(),
        line(),
        anchor(name=b'"memory/m"'),
        anchor(date=b'"2026-11-22T01:37:38+05:30"'),
        line(),
    ]
    read: list[bytes] = []
    assert check_block(LANE, b"\n".join(block) + b"\n", False, anchors=read) == 3
    assert read == block[1:4:2]


@pytest.mark.parametrize("room", [1, 2, 3, 1 << 20])
def test_the_lane_reads_a_block_of_hostile_lines_as_fastlane_counts_them(room: int) -> None:
    between = [b"", b"\x0b\x0c\n", b" \t\r\n", b" \t"]  # nothing, blank lines, or the next one indented
    block = b"".join(raw + b"\n" + between[i % 4] for i, (_, raw, _, _) in enumerate(CASES))
    for labels in (False, True):
        for errors in (False, True):
            check_block(LANE, block, labels, room, pos=3, offset=70, errors=errors)


def test_the_lane_passes_over_blank_lines_and_leaves_a_line_too_long_to_parse() -> None:
    assert check_block(LANE, b"\x0b\x0c\n \t\r\n\n" + line() + b"\n \n", False) == 1
    padding = SCAN_PARSE_LIMIT - len(content(b"")) - 1
    assert check_line(LANE, content(b"x" * padding), False)  # exactly the limit, with its newline
    assert not check_line(LANE, content(b"x" * (padding + 1)), False)
    assert LANE().take(b" " * SCAN_PARSE_LIMIT + b"\n", 0, 1, 0, 9, False) == (0, 1, blocklane.DECLINED)


# ---- by property: mutated sample lines ------------------------------------------------------

SEEDS = [raw for raw in SAMPLES if raw.strip()] + [raw for _, raw, _, _ in CASES if len(raw) < 5000]
OBJECTS = [raw for raw in SEEDS if raw.lstrip().startswith(b"{") and plain(raw, False) is not None]
ALPHABET = b'"\\{}[],:u0dD8e-+.Z \t\r\x0b\x0c\x00\x1f\x7f\x80\xbf\xc0\xc2\xe0\xed\xef\xf0\xf4\xf5\xff'
TOKENS = (
    b"\\u0069", b"\\u0000", b"\\ud800", b"\\udc00", b"\\ud83d\\ude00", b"e5", b"E-400", b".5", b"-0", b"0",
    b'"id": 9, ', b'"kind": "message", ', b'"kind": "event", ', b'"role": "x", ', b'"name": "run", ',
    b'"status": "error", ', b'"context": false, ', b'"message": 1, "kind": 2, ', b'"model": "m", ',
    b'"prompt_tokens": 7, ', b'"calls": [1], ', b'"results": [{"message": 1, "kind": 2}], ', b'"meta": {}, ',
    b'"date": "2026-11-22T01:37:38Z", ', b'"payload": {}, ', b'"data": {}, ', b'"usage": {}, ', b"false",
    b"null", b"[]", b"{}", b'"error"', b".error", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf",
    b"\xef\xbb\xbf", b"9223372036854775807", b"+05:30", b"Z", b".1234567", b"\n", b"\r",
)  # fmt: skip
KEYS = (
    "id",
    "kind",
    "payload",
    "meta",
    "date",
    "role",
    "calls",
    "results",
    "name",
    "data",
    "status",
    "model",
)
KEYS += (
    "usage",
    "total_tokens",
    "prompt_tokens",
    "prompt_tokens_details",
    "cached_tokens",
    "context",
    "error",
)
VALUES = (
    0, -1, 7, 2**40 - 1, 2**40, -(2**40) + 1, 2**63 - 1, 2**63, -(2**63), 1.5, -0.0, True, False, None, "",
    "error", "x.error", "run", "loop.start", "loop.result", "model_switch", "message", "event", "tool_call",
    "tool_result", "system", "anchor", "user", "m\u00e9", "2026-11-22T01:37:38Z", "2026-11-22T01:37:38",
    "1899-12-31T23:59:59+01:00", [], {}, [{"message": "m", "kind": "k"}], {"context": False},
    {"cached_tokens": 5}, {"total_tokens": 9, "prompt_tokens": 4}, {"model": "m", "usage": {"total_tokens": 3}},
)  # fmt: skip


@st.composite
def edited(draw: st.DrawFn) -> bytes:
    """A plain sample line with a member set, replaced or removed somewhere inside, written out
    with or without escapes: valid JSON that means something else."""
    obj = json.loads(draw(st.sampled_from(OBJECTS)))
    for _ in range(draw(st.integers(0, 3))):
        target = obj
        while (inner := [v for v in target.values() if type(v) is dict]) and draw(st.booleans()):
            target = draw(st.sampled_from(inner))
        key = draw(st.sampled_from(KEYS))
        if draw(st.integers(0, 3)) == 0:
            target.pop(key, None)
        else:
            target[key] = json.loads(json.dumps(draw(st.sampled_from(VALUES))))
    return json.dumps(
        obj, ensure_ascii=draw(st.booleans()), separators=draw(st.sampled_from([None, (",", ":")]))
    ).encode()


@st.composite
def mutants(draw: st.DrawFn) -> bytes:
    """A sample line or an edited one, with a few bytes flipped, swapped, inserted, dropped or copied:
    mostly at the start of a member or of a string, where the line often stays valid JSON."""
    raw = bytearray(draw(st.sampled_from(SEEDS) | edited()))
    for _ in range(draw(st.integers(0, 2))):
        starts = [i + 1 for i, c in enumerate(raw) if c in b'{"'] + [
            i + 2 for i in range(len(raw)) if raw[i : i + 2] == b", "
        ]
        at = draw(st.sampled_from(starts) if starts and draw(st.booleans()) else st.integers(0, len(raw)))
        op = draw(st.integers(0, 6))
        if op == 0 and at < len(raw):
            raw[at] ^= 1 << draw(st.integers(0, 7))
        elif op == 1 and at < len(raw):
            raw[at] = draw(st.sampled_from(ALPHABET))
        elif op == 2:
            raw[at:at] = bytes([draw(st.sampled_from(ALPHABET))])
        elif op == 3:
            del raw[at : at + draw(st.integers(1, 12))]
        elif op == 4:
            where = draw(st.sampled_from(starts) if starts else st.integers(0, len(raw)))
            raw[where:where] = raw[at : at + draw(st.integers(1, 40))]
        elif op == 5:
            raw[at:at] = draw(st.sampled_from(TOKENS))
        else:
            raw[at:at] = bytes([draw(st.integers(0, 255))])
    return bytes(raw)


@settings(max_examples=1500, deadline=None)
@given(raw=mutants(), labels=st.booleans(), errors=st.booleans())
def test_the_lane_takes_a_mutated_line_only_as_fastlane_counts_it(
    raw: bytes, labels: bool, errors: bool
) -> None:
    for part in raw.split(b"\n"):
        assert truncated(plain(part, labels)) == (fastlane_reads(part, labels) if part.strip() else None)
    check_block(LANE, raw + b"\n", labels, errors=errors)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(mutants() | st.sampled_from([b"", b"\x0b\x0c", b" \t", b"\x00", b"\x1c"]), max_size=12),
    labels=st.booleans(),
    room=st.sampled_from([1, 2, 3, 1 << 20]),
    errors=st.booleans(),
)
def test_the_lane_counts_a_block_of_mutated_lines_as_fastlane_does(
    lines: list[bytes], labels: bool, room: int, errors: bool
) -> None:
    check_block(
        LANE, b"".join(raw + b"\n" for raw in lines), labels, room, pos=11, offset=4096, errors=errors
    )


ESCAPES = (
    b'\\"',
    b"\\\\",
    b"\\/",
    b"\\b",
    b"\\f",
    b"\\n",
    b"\\r",
    b"\\t",
    b"\\u00e9",
    b"\\ud83d\\ude00",
    b'\\\\\\"',
)
ESCAPES += (b"\\x", b"\\'", b"\\ud800", b"\\udc00", b"\\", b"\\u12", b"\\\xc3\xa9", b"\\\x00", b"\\\n")


@pytest.mark.parametrize("escape", ESCAPES)
def test_the_lane_reads_an_escape_wherever_it_falls_in_a_string(escape: bytes) -> None:
    # Escapes are passed over sixteen bytes at a time (_lane.c, escaped_run): at every place in a
    # block, next to each other and next to the closing quote.
    for at in range(40):
        for text in (b"a" * at + escape + b"b" * 20, b"a" * at + escape * 3, b"a" * at + escape):
            raw = content(text)
            assert check_line(LANE, raw, False) == (plain(raw, False) is not None), raw
            raw = anchor(state=b'"%s"' % text)
            read: list[bytes] = []
            check_block(LANE, raw + b"\n", False, anchors=read)
            assert (read == [raw]) == (anchor_reads(raw) is not None), raw
