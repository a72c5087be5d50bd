"""The compiled lane over Bub-next lines (tapes/lane_next.h) held to the Python lane it stands in for
(tapes.nextlane.python_lines): it may leave any line to the full path, but a line it takes is
recorded and counted exactly as the Python lane records and counts it (a failed operation or a
status event, which that lane leaves, exactly as the full path counts it), and every line of the
samples that the Python lane takes, it takes too. Each check runs both lanes over the same block
with the same stand-in for the indexing run: the indexer's own full path, without a database."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tapeview.sources.bub_next_lines import FORMAT, STATUS_EVENTS
from tapeview.tapes import blocklane, index, nextlane
from tapeview.tapes.bulk import AnchorRow
from tapeview.tapes.models import Tape
from tapeview.tapes.packing import Batch
from tapeview.tapes.phase_tally import OVERFLOW_WORDS, PhaseTally
from tests.conftest import FIXTURES

pytestmark = pytest.mark.skipif(blocklane.native is None, reason="the compiled lane is not built")

SAMPLES = sorted((FIXTURES / "bub-next").glob("*.jsonl*"))
SAMPLE = FIXTURES / "bub-next" / "session_realistic.jsonl"
TAPE_FIELDS = (
    *("unreadable", "anchors", "last_anchor", "overflowed", "phase_count"),
    *("entries", "entries_since_anchor", "last_id", "first_at", "last_at", "indexed_offset", "next_pos"),
    *("model", "tokens", "last_prompt_tokens", "last_cached_tokens", "context_tokens", "errors"),
)
PHASE_FIELDS = (
    *("entries", "end_pos", "started_at", "ended_at", "prompt_tokens", "completion_tokens"),
    *("cached_tokens", "tool_calls", "errors", "model", "roles"),
)


class Run:
    """The indexing run as both lanes see it (fastlane.Run): a phase open, the lines left to the
    full path recorded and read by it (index._Run.full), the batches kept instead of written."""

    size = 1 << 20

    def __init__(self, labels: bool = False, overflowed: bool = False) -> None:
        self.tape = Tape(kind="bub", line_format=FORMAT, name="t", label="t", overflowed=overflowed)
        self.tally = PhaseTally(self.tape)
        self.tally.current = AnchorRow(1, phase_index=0)
        self.rows, self.anchors, self.labels = Batch(), [], labels
        self.left: list[tuple[int, int, bytes]] = []  # what went down the full path
        self.flushed: list[tuple] = []  # each batch packed, as index._Run.flush writes it

    def full(self, pos: int, offset: int, line: object, parsed: object) -> None:
        self.left.append((pos, offset, line))
        index._Run.full(self, pos, offset, line, parsed)

    def flush(self) -> None:
        self.flushed.append(self.rows.packed())
        self.rows = Batch()

    def wants_label(self) -> bool:
        return self.labels


class Block:
    """A block of whole lines as bub.blocks gives it (nextlane.read), from position 1."""

    def __init__(self, data: bytes, offset: int = 0) -> None:
        self.path, self.start, self.first_pos, self.data, self.offset = Path("-"), offset, 1, data, offset

    def __iter__(self):
        yield self.offset, self.data, self.data.rfind(b"\n") + 1


def outcome(lines, data: bytes, **run_options) -> tuple:
    """What one lane did with the block: its rows, the tape's and the phase's figures (what the index
    keeps), and where the lines it left to the full path are."""
    run = Run(**run_options)
    lines(run, Block(data, offset=100))
    rows = []
    for kinds, names, columns in [*run.flushed, run.rows.packed()]:
        for i in range(len(columns["pos"])):
            kind, name = kinds[columns["kind"][i]], names[columns["name"][i]]
            fixed = ("pos", "offset", "length", "entry_id", "date", "flags")
            rows.append((*(int(columns[c][i]) for c in fixed), kind, name))
    tape = {f: getattr(run.tape, f) for f in TAPE_FIELDS}
    # What the tape's cost is made of: its reported cost, and per (phase, model) tokens and cost.
    tape["reported_cost"] = getattr(run.tape, "reported_cost", None)
    tape["pending usage"] = run.tape.__dict__.get("_phase_usage_pending")
    phase = {f: getattr(run.tally.current, f) for f in PHASE_FIELDS}
    return rows, tape, phase, [(pos, offset) for pos, offset, _ in run.left]


def check(raw: bytes, labels: bool = False, overflowed: bool = False) -> bool:
    """The rule for one line (without its newline): whether the compiled lane took it."""
    data = raw + b"\n"
    python = outcome(nextlane.python_lines, data, labels=labels, overflowed=overflowed)
    native = outcome(nextlane.compiled_lines, data, labels=labels, overflowed=overflowed)
    assert native[:3] == python[:3], raw  # (a line left to the full path: as the Python lane reads it)
    if native[3]:
        return False
    assert not python[3] or errorish(raw), f"took a line the Python lane leaves to the full path: {raw!r}"
    return True


def errorish(raw: bytes) -> bool:
    """A failed operation's line, or a status event's: the compiled lane counts them as the full path does."""
    try:
        name = json.loads(raw)["type"].removeprefix("build.bub.").removesuffix(".v1")
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    return name.endswith(".failed") or name in STATUS_EVENTS


def events() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines()]


def of_type(name: str, source: str | None = None) -> dict:
    return copy.deepcopy(
        next(
            e
            for e in events()
            if e["type"] == f"build.bub.{name}.v1" and (source is None or e["data"]["source"] == source)
        )
    )


def with_content(name: str, content: str) -> dict:
    event = of_type(name)
    event["data"]["observation"]["results"][0]["content"] = content
    return event


def deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def awkward() -> list[bytes]:
    """Lines written otherwise than Bub writes them, or that Bub's next reader refuses."""
    user, agent, system = (
        of_type("message", "user"),
        of_type("message", "agent"),
        of_type("message", "system"),
    )
    tools = next(copy.deepcopy(e) for e in events() if e["data"].get("tool_calls"))
    out: list[object] = []
    changes = [
        lambda o: o.update(specversion="0.3"),
        lambda o: o.update(specversion=1.0),
        lambda o: o.update(id=""),
        lambda o: o.update(id=7),
        lambda o: o.update(source=""),
        lambda o: o.pop("type"),
        lambda o: o.update(type=""),
        lambda o: o.update(type="build.bub.v1"),
        lambda o: o.update(type="build.bub.message.v2"),
        lambda o: o.update(type="com.example.message"),
        lambda o: o.update(type="build.bub.méssage.v1"),
        lambda o: o.pop("time"),
        lambda o: o.update(time=None),
        lambda o: o.update(time="2026-12-01T21:55:08"),
        lambda o: o.update(time="2026-12-01T21:55:08Z"),
        lambda o: o.update(time="2026-12-01T21:55:08.1Z"),
        lambda o: o.update(time="2026-12-01 21:55:08+00:00"),
        lambda o: o.update(time="2026-12-01T23:55:08+05:30"),
        lambda o: o.update(time="2026-12-01T23:55:08-11:00"),
        lambda o: o.update(time="2026-02-30T00:00:00Z"),
        lambda o: o.update(time="2200-01-01T00:00:00Z"),
        lambda o: o.update(time="1850-01-01T00:00:00Z"),
        lambda o: o.update(time="yesterday"),
        lambda o: o.update({"bub_turn": "x"}),
        lambda o: o.update({"BUBX": "x"}),
        lambda o: o.update({"bübx": "x"}),
        lambda o: o.update({"": "x"}),
        lambda o: o.update({"bubextra": {"nested": [1, {"deeper": None}]}}),
        lambda o: o.update(bubcontext="true"),
        lambda o: o.update(bubcontext=1),
        lambda o: o.update(bubcontext=False),
        lambda o: o.pop("bubcontext"),
        lambda o: o["data"].update(source="robot"),
        lambda o: o["data"].update(source=["user"]),
        lambda o: o["data"].update(source=None),
        lambda o: o["data"].pop("message"),
        lambda o: o["data"].update(message=None),
        lambda o: o["data"].update(model_name="x"),
        lambda o: o["data"].update(metrics={}),
        lambda o: o["data"].update(observation={"results": []}),
        lambda o: o["data"].update(extra=deep(150)),
        lambda o: o["data"].update(extra=deep(300)),
        lambda o: o["data"].update(step_id=2**70),
        lambda o: o["data"].update(step_id=10**400),
        lambda o: o["data"].update(step_id=-0.0),
        lambda o: o["data"].update(step_id=1.5e300),
        lambda o: o["data"].update(message="emoji 😀 and é, 中文"),
        lambda o: o.update(data=[]),
        lambda o: o.update(data=None),
    ]
    for change in changes:
        for base in (user, system):
            changed = copy.deepcopy(base)
            change(changed)
            out.append(changed)
    for change in (
        lambda o: o["data"].update(tool_calls=[]),
        lambda o: o["data"].update(tool_calls={"a": 1}),
        lambda o: o["data"].update(tool_calls=[1, 2, 3]),
        lambda o: o["data"].update(model_name=""),
        lambda o: o["data"].update(model_name=5),
        lambda o: o["data"].update(model_name="mödel:ünicode"),
        lambda o: o["data"].update(model_name="m" * 300),
        lambda o: o["data"].pop("model_name", None),
        lambda o: o["data"].update(observation=[]),
        # The step's own cost (metrics.cost), reported where it is a number not below zero.
        lambda o: o["data"].update(metrics={"cost": 0.0123}),
        lambda o: o["data"].update(metrics={"cost": 2, "prompt_tokens": 5}),
        lambda o: o["data"].update(metrics={"cost": 0}),
        lambda o: o["data"].update(metrics={"cost": -1.5}),
        lambda o: o["data"].update(metrics={"cost": "0.5"}),
        lambda o: o["data"].update(metrics={"cost": None}),
        lambda o: o["data"].update(metrics={"cost": True}),
        lambda o: o["data"].update(metrics={"cost": [0.5]}),
        lambda o: o["data"].update(metrics={"cost": {"usd": 0.5}}),
        lambda o: o["data"].update(metrics={"cost": 10**30}),
        lambda o: o["data"].update(metrics={"cost": 1.5e300}),
        lambda o: o["data"].update(metrics={"costs": 0.5}),
        lambda o: o["data"].update(metrics=[0.5]),
        lambda o: o["data"].update(metrics="0.5"),
    ):
        for base in (agent, tools):
            changed = copy.deepcopy(base)
            change(changed)
            out.append(changed)
    usage = {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 30}
    for content in (
        json.dumps({"duration_ms": 5, "usage": usage}),
        json.dumps({"usage": {**usage, "prompt_tokens_details": {"cached_tokens": 4}}}),
        json.dumps({"usage": {**usage, "prompt_tokens_details": 3}}),
        json.dumps({"usage": {"prompt_tokens": 20, "completion_tokens": 7}}),
        json.dumps({"usage": {"prompt_tokens": 0, "total_tokens": 0}}),
        json.dumps({"usage": {"completion_tokens": 7}}),
        json.dumps({"usage": {"prompt_tokens": 2**40, "total_tokens": 2**40 - 1}}),
        json.dumps({"usage": {"prompt_tokens": 2**63, "total_tokens": 2**64 + 1}}),
        json.dumps({"usage": {"prompt_tokens": 2**70, "total_tokens": 9}}),
        json.dumps({"usage": {"prompt_tokens": -3, "total_tokens": 9}}),
        json.dumps({"usage": {"prompt_tokens": 3.0, "total_tokens": 9}}),
        json.dumps({"usage": {"prompt_tokens": "5"}}),
        json.dumps({"usage": {"prompt_tokens": True, "total_tokens": 9}}),
        json.dumps({"usage": {"prompt_tokens": 1e3, "total_tokens": 9}}),
        json.dumps({"usage": [1]}),
        json.dumps({"usage": None}),
        json.dumps({"usage": usage, "model": "ignored"}),
        json.dumps({"usage": {"prompt_tokens_details": {"cached_tokens": 5}, **usage}, "x": deep(50)}),
        '{"usage": {"prompt_tokens": 5, "prompt_tokens": 9}}',
        '{"usage": {"prompt_tokens": 5}, "usage": {"prompt_tokens": 9}}',
        '{"us\\u0061ge": {"prompt_tokens": 5}}',
        '  {"usage" : { "prompt_tokens" : 5 } }  ',
        '{"usage": {"prompt_tokens": NaN}}',
        '{"usage": {"prompt_tokens": 5}',
        '{"usage": {"prompt_tokens": 5}} x',
        "{not json",
        "",
        "   ",
        "[1]",
        '"text"',
        "5",
        '{"usage": "\\ud800"}',
        '{"usage": {"prompt_tokens": 5}, "note": "caf\\u00e9 \\ud83d\\ude00"}',
        '{"usage": {"prompt_tokens": 5}, "note": "tab\tinside"}',
    ):
        out.append(with_content("model.completed", content))
    for name in ("loop.start", "model_switch", "run"):
        base = of_type("loop.start")
        base["type"] = f"build.bub.{name}.v1"
        for content in (
            json.dumps({"model": "switched:model"}),
            json.dumps({"model": "modèle:ü"}, ensure_ascii=False),
            json.dumps({"model": "modèle:ü"}),
            json.dumps({"model": ""}),
            json.dumps({"model": 5}),
            json.dumps({"model": "a", "model2": "b"}),
            '{"model": "a", "model": "b"}',
            "{not json",
            "[]",
        ):
            changed = copy.deepcopy(base)
            changed["data"]["observation"]["results"][0]["content"] = content
            out.append(changed)
        for observation in (
            {},
            {"results": {}},
            {"results": ["x", {"content": "{}"}]},
            {"results": [{}]},
            [],
        ):
            changed = copy.deepcopy(base)
            changed["data"]["observation"] = observation
            out.append(changed)
    for name in ("tool.failed", "model.failed", "command", "spill.write", "context.anchor", "error"):
        out.append(of_type("loop.step") | {"type": f"build.bub.{name}.v1"})
    for name in ("tool.failed", "model.failed", "agent.invocation.failed", "command", "spill.write"):
        for content in (
            json.dumps({"status": "error", "error": "boom"}),
            json.dumps({"status": "ok"}),
            json.dumps({"status": 5}),
            json.dumps({"error": "Context_Length_Exceeded: too long"}),
            json.dumps({"status": "error", "error": "this model's MAXIMUM context length is 8192"}),
            json.dumps({"status": "error", "error": {"detail": "over the context window"}}),
            json.dumps({"status": "error", "error": "\u0063ontext window"}),
            json.dumps({"status": "error", "error": "context\nwindow"}),
            '{"status": "\\u0065rror"}',
            '{"status": "error", "status": "ok"}',
            '{"status": "error", "n": NaN}',
            '{"status": "error", "n": 123456789012345678901234567890}',
            "{not json",
            "[]",
        ):
            changed = with_content("tool.failed", content)
            changed["type"] = f"build.bub.{name}.v1"
            out.append(changed)
        out.append(with_content("tool.failed", "{}") | {"type": f"build.bub.{name}.context window.v1"})
        out.append(of_type("loop.step") | {"type": f"build.bub.{name}.v1"})
    lines = [json.dumps(o).encode() for o in out]
    lines += [json.dumps(o, ensure_ascii=False).encode() for o in out[:20]]
    plain = json.dumps(user).encode()
    lines += [
        plain.replace(b'"type"', b'"\\u0074ype"', 1),
        plain.replace(b'"bubcontext": true', b'"bubcontext": true, "bubcontext": false', 1),
        plain.replace(b'"type":', b'"type": "build.bub.error.v1", "type":', 1),
        plain.replace(b'"source": "user"', b'"source": "us\\u0065r"', 1),
        plain.replace(b'"user"', b'"\\ud800"', 1),
        plain.replace(
            b'"text": "', b'"text": "\\ud83d\\ude00 \\u00e9 \\"quoted\\" \\\\ \\/ \\b\\f\\n\\r\\t ', 1
        ),
        plain.replace(b'"text": "', b'"text": "\\ude00', 1),
        plain.replace(b'"text": "', b'"text": "\\x', 1),
        plain.replace(b'"text": "', b'"text": "\xff', 1),
        plain.replace(b'"text": "', b'"text": "\xed\xa0\x80', 1),
        plain.replace(b'"text": "', b'"text": "\xc0\xaf', 1),
        plain.replace(b'"text": "', b'"text": "\x01', 1),
        plain.replace(b'"specversion": "1.0"', b'"specversion": "1\\u002e0"', 1),
        plain.replace(b'"data": {', b'"data": {"message": 1, ', 1),
        b"  " + plain + b" \t\r",
        plain + b" x",
        plain[: len(plain) * 6 // 10],
        plain[:-1],
        plain + b"}",
        b"{not json",
        b"[1]",
        b"null",
        b"",
        b"   ",
        b"\x0b",
        b'{"id": 3, "kind": "message", "payload": {"role": "user"}, "meta": {}, "date": "2026-12-01T00:00:00Z"}',
        json.dumps(dict(reversed(list(user.items())))).encode(),
        json.dumps(user, separators=(",", ":")).encode(),
        json.dumps(user, indent=None, sort_keys=True).encode(),
    ]
    return lines


def sample_lines() -> list[bytes]:
    return [raw for path in SAMPLES for raw in path.read_bytes().splitlines()]


def test_the_compiled_lane_takes_every_sample_line_the_python_lane_takes() -> None:
    taken = [check(raw) for raw in sample_lines()]
    python = [not outcome(nextlane.python_lines, raw + b"\n")[3] for raw in sample_lines()]
    assert all(t for t, p in zip(taken, python, strict=True) if p)
    assert sum(python) > 200  # most lines are only counted (the rest: anchors, failures, statuses)
    # and the failures and status events, but for those that say the context overflowed
    quiet = [errorish(raw) and not any(w in raw.lower() for w in OVERFLOW_WORDS) for raw in sample_lines()]
    assert sum(taken) - sum(python) == sum(quiet) > 10


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("labels", [False, True], ids=["labelled", "label-wanted"])
def test_the_compiled_lane_indexes_a_sample_as_the_python_lane_does(path: Path, labels: bool) -> None:
    data = path.read_bytes()
    native = outcome(nextlane.compiled_lines, data, labels=labels)
    assert native[:3] == outcome(nextlane.python_lines, data, labels=labels)[:3]


@pytest.mark.parametrize("raw", awkward(), ids=range(len(awkward())))
@pytest.mark.parametrize(
    ("labels", "overflowed"),
    [(False, False), (True, False), (False, True)],
    ids=["", "label-wanted", "overflowed"],
)
def test_the_compiled_lane_takes_an_awkward_line_only_as_the_python_lane_does(
    raw: bytes, labels: bool, overflowed: bool
) -> None:
    check(raw, labels=labels, overflowed=overflowed)


def test_the_compiled_lane_reads_the_usage_and_models_inside_payloads() -> None:
    usage = {
        "usage": {"prompt_tokens": 20, "total_tokens": 30, "prompt_tokens_details": {"cached_tokens": 4}}
    }
    assert check(json.dumps(with_content("model.completed", json.dumps(usage))).encode())
    switched = with_content(
        "loop.start", json.dumps({"model": "modèle:ü"}, ensure_ascii=False)
    )  # as Bub writes it
    assert check(json.dumps(switched).encode())
    emoji = json.dumps(of_type("message", "user") | {"bubx": "😀"}).encode()
    assert b"\\ud83d\\ude00" in emoji and check(emoji)


def test_a_block_of_awkward_lines_is_indexed_as_the_python_lane_indexes_it() -> None:
    lines = sample_lines()[:60]
    data = b"".join(raw + b"\n" for raw in lines)
    assert outcome(nextlane.compiled_lines, data)[:3] == outcome(nextlane.python_lines, data)[:3]
    odd = [raw for raw in awkward() if not check(raw) and outcome(nextlane.python_lines, raw + b"\n")[3]]
    mixed = b"".join(raw + b"\n" for pair in zip(lines, odd, strict=False) for raw in pair)
    assert outcome(nextlane.compiled_lines, mixed)[:3] == outcome(nextlane.python_lines, mixed)[:3]


def test_a_full_batch_stops_the_compiled_lane_where_the_python_lane_flushes() -> None:
    data = SAMPLE.read_bytes()
    Run.size = 7
    try:
        assert outcome(nextlane.compiled_lines, data)[:3] == outcome(nextlane.python_lines, data)[:3]
    finally:
        Run.size = 1 << 20


@st.composite
def mutants(draw: st.DrawFn) -> bytes:
    """A sample line with a few bytes changed, cut or put in (escapes, digits, quotes, UTF-8)."""
    raw = bytearray(draw(st.sampled_from(sample_lines())))
    pieces = [
        b"\\",
        b'"',
        b"\\u00e9",
        b"\\ud83d",
        b"\\ude00",
        b"0",
        b"9" * 20,
        b"{",
        b"}",
        b"[",
        b",",
        b" ",
        b"\xc3",
    ]
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(raw)))
        if draw(st.booleans()):
            raw[at:at] = draw(st.sampled_from(pieces))
        else:
            del raw[at : at + draw(st.integers(1, 4))]
    return bytes(raw).replace(b"\n", b" ")


@settings(max_examples=400, deadline=None)
@given(raw=mutants(), labels=st.booleans(), overflowed=st.booleans())
def test_the_compiled_lane_takes_a_mutated_line_only_as_the_python_lane_does(
    raw: bytes, labels: bool, overflowed: bool
) -> None:
    check(raw, labels=labels, overflowed=overflowed)
