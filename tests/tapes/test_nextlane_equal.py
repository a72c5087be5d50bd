"""The bulk path through tapes in Bub's next format (tapes.nextlane) indexes exactly what the full
path (sources.bub_next_lines, line by line) indexes, whatever the lines hold and wherever batches end."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from tapeview.sources import bub
from tapeview.tapes import blocklane, index, nextlane
from tests.tapes.indexed import indexed

from .next_tapes import FIXTURES, make_home

pytestmark = pytest.mark.django_db

SAMPLE = FIXTURES / "bub-next" / "session_realistic.jsonl"


def events() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines()]


def of_type(name: str) -> dict:
    return copy.deepcopy(next(e for e in events() if e["type"] == f"build.bub.{name}.v1"))


def with_content(name: str, payload: object) -> dict:
    event = of_type(name)
    event["data"]["observation"]["results"][0]["content"] = (
        payload if isinstance(payload, str) else json.dumps(payload)
    )
    return event


def odd_lines() -> list[bytes]:
    """Lines Bub's next reader refuses or reads with care, and every kind the full path must read."""
    out: list[object] = []
    user = next(e for e in events() if e["type"].endswith("message.v1") and e["data"]["source"] == "user")
    agent = next(e for e in events() if "tool_calls" in e["data"])
    for change in (
        lambda o: o.update(specversion="0.3"),
        lambda o: o.update(id=""),
        lambda o: o.update(id=7),
        lambda o: o.pop("type"),
        lambda o: o.pop("time"),
        lambda o: o.update(time="2026-12-01T21:55:08"),
        lambda o: o.update(time="yesterday"),
        lambda o: o.update(time="2026-12-01T23:55:08+05:30"),
        lambda o: o.update({"bub_turn": "x"}),
        lambda o: o.update({"bubextra": 5}),
        lambda o: o["data"].update(source="robot"),
        lambda o: o["data"].update(source=["user"]),
        lambda o: o["data"].pop("message"),
        lambda o: o["data"].update(model_name="x"),
        lambda o: o["data"].update(observation={"results": []}),
        lambda o: o.update(data=[]),
        lambda o: o.update(bubcontext="true"),
        lambda o: o.update(type="com.example.other"),
    ):
        changed = copy.deepcopy(user)
        change(changed)
        out.append(changed)
    step = copy.deepcopy(agent)
    step["data"]["model_name"] = "other:model"
    out += [step, copy.deepcopy(agent)]
    out.append(with_content("model.completed", {"usage": {"prompt_tokens": 2**70, "total_tokens": 9}}))
    out.append(with_content("model.completed", {"usage": {"prompt_tokens": "5"}}))
    out.append(with_content("model.completed", {"usage": {"total_tokens": 40, "prompt_tokens_details": 3}}))
    out.append(with_content("model.completed", "{not json"))
    out.append(with_content("model.completed", '{"usage": {"prompt_tokens": NaN}}'))
    out.append(with_content("loop.start", {"model": "switched:model"}))
    out.append(with_content("loop.start", {"model": 5}))
    out.append(with_content("command", {"status": "error", "raw": ",x"}))
    out.append(with_content("context.anchor", {"name": "memory/x", "state": []}))
    out.append(with_content("model.failed", {"error": "context_length_exceeded"}))
    lines = [json.dumps(o).encode() + b"\n" for o in out]
    lines += [
        b"{not json\n",
        b"\n",
        b"   \n",
        b"[1]\n",
        json.dumps(user).encode().replace(b'"user"', b'"\\ud800"', 1) + b"\n",
        b'{"id": 3, "kind": "message", "payload": {"role": "user"}, "meta": {}, "date": "2026-12-01T00:00:00+00:00"}\n',
    ]
    return lines


def write_folder(root: Path, seed: int) -> Path:
    home = make_home(root, old=False)
    rng = random.Random(seed)
    tape = next(home.glob("*0b871d5e50e7c192.jsonl"))
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    mixed = lines[:5] + [*lines[5:], *odd_lines()]
    rng.shuffle(mixed)
    tape.write_bytes(b"".join(lines[:5] + mixed + lines))
    return home


def full_path_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def every_line_full(run, blocks) -> None:
        for pos, offset, raw in bub.lines(blocks.path, blocks.start, blocks.first_pos):
            run.full(pos, offset, raw, nextlane.NOT_PARSED)

    monkeypatch.setattr(nextlane, "index_lines", every_line_full)


@pytest.mark.parametrize(("seed", "block", "batch"), [(1, 1 << 20, 4096), (2, 4096, 4096), (3, 700, 4096)])
@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_the_bulk_path_indexes_what_the_full_path_does(
    tmp_path, monkeypatch, seed, block, batch, compiled
) -> None:
    monkeypatch.setattr(bub, "BLOCK", block)
    monkeypatch.setattr(index._Run, "size", batch)
    if not compiled:  # the Python lane: where tapes/_lane.c is not built
        monkeypatch.setattr(blocklane, "native", None)
    home = write_folder(tmp_path / "a", seed)
    fast = indexed("fast", home)
    full_path_only(monkeypatch)
    slow = indexed("slow", home)
    assert fast == slow
    assert any(stats["unreadable"] >= 15 for stats, _, _ in fast.values())


def test_it_takes_most_lines_itself(tmp_path, monkeypatch) -> None:
    home = make_home(tmp_path / "a", old=False)
    taken = []
    full = index._Run.full
    monkeypatch.setattr(index._Run, "full", lambda self, *line: taken.append(line[0]) or full(self, *line))
    indexed("fast", home)
    # the anchors, errors, status events and the first message (for the label) of 169 + 10 + 16 + 41 lines
    assert len(taken) < 40


def test_a_line_too_long_to_read_whole_is_read_from_its_head(tmp_path, monkeypatch) -> None:
    home = make_home(tmp_path / "a", old=False)
    tape = next(home.glob("*0b871d5e50e7c192.jsonl"))
    big = copy.deepcopy(
        next(e for e in events() if e["type"].endswith("message.v1") and e["data"]["source"] == "user")
    )
    big["data"]["message"] = [{"type": "text", "text": "x" * (5 << 20)}]
    result = of_type("tool.completed")
    result["data"]["observation"]["results"][0]["content"] = json.dumps({"result": "y" * (5 << 20)})
    headless = {"data": big["data"], **{k: v for k, v in big.items() if k != "data"}}
    with tape.open("ab") as f:
        f.write(b"".join(json.dumps(o).encode() + b"\n" for o in (big, result, headless)))
    lanes = {}
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(blocklane, "native", None)
        lanes[compiled] = indexed(f"lane{compiled}", home)
    assert lanes[True] == lanes[False]
    stats, _, rows = lanes[True][tape.name]
    assert stats["entries"] == 169 + 2 and stats["unreadable"] == 1
    last = {r.pos: r for r in rows}
    assert (last[170].kind, last[170].name, last[171].kind, last[171].name) == (
        "message",
        "user",
        "event",
        "tool.completed",
    )
    assert not last[172].readable
    entries = list(bub.scan(tape))[-3:]
    assert [e.readable for e in entries] == [True, True, False] and entries[0].truncated
    assert "too long to read whole" in entries[2].problem
