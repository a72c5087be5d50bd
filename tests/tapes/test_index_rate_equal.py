"""The bulk path at the rate's settings (tapes.fastlane, bulk.append going on from the chunk it
last wrote, batches of index.BATCH): it indexes exactly what the agent's own reading rules index,
whatever the file holds, wherever blocks and batches end, and however the file grew."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tapeview.demodata.bub import bub_line, bub_turns
from tapeview.sources import bub, parse_sources
from tapeview.tapes import blocklane, discovery, fastlane, index
from tapeview.tapes.models import Tape
from tests.conftest import FIXTURES
from tests.tapes.indexed import indexed

pytestmark = pytest.mark.django_db

NAME = "a1b2c3d4e5f60718__0123456789abcdef"
CSRF = re.compile(r"(?<=X-CSRFToken\": \")\w+|(?<=csrfmiddlewaretoken\" value=\")\w+")


def line(i: int, kind: str, payload: object, date: object = None, **more: object) -> bytes:
    entry = {"id": i, "kind": kind, "payload": payload, "meta": more.pop("meta", {}), **more}
    if date is not None:
        entry["date"] = date
    return json.dumps(entry, ensure_ascii=False).encode() + b"\n"


def deep(levels: int) -> dict:
    value: dict = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def odd_lines(rng: random.Random, start: int) -> list[bytes]:
    """Lines a hand-edited or crashed tape holds, and every special line the full path must read."""
    d = "2026-11-01T10:00:00+00:00"
    usage = {"total_tokens": 30, "prompt_tokens": 20, "prompt_tokens_details": {"cached_tokens": 5}}
    found = [
        b"{not json\n",
        b"   \n",
        b"\n",
        b"[1, 2]\n",
        b'"a string"\n',
        b"3\n",
        b'{"id": 1, "kind": "message", "payload": {"role": "user"}, "date": NaN}\n',
        b'{"id": true, "kind": "message", "payload": {"role": "user"}, "date": "' + d.encode() + b'"}\n',
        b'{"id": "7", "kind": "message", "payload": {}, "date": "' + d.encode() + b'"}\n',
        line(2**70, "message", {"role": "user"}, d),
        line(2**63, "message", {"role": "user"}, d),
        line(-(2**63) - 1, "system", {"content": "s"}, d),
        line(start, "message", {"role": 5}, d),
        line(start, "message", {"role": "r" * 60}, d),
        line(start, "message", "not a dict", d),
        line(start, "message", {"role": "user"}),
        line(start, "message", {"role": "user"}, timestamp=1_790_000_000),
        line(start, "message", {"role": "user"}, "2026-11-01T10:00:00Z"),
        line(start, "message", {"role": "user"}, "2026-11-01T10:00:00"),
        line(start, "message", {"role": "user"}, "2026-11-01 10:00:00+00:00"),
        line(start, "message", {"role": "user"}, "2026-13-01T10:00:00+00:00"),
        line(start, "message", {"role": "user"}, "2026-02-29T10:00:00+00:00"),
        line(start, "message", {"role": "user"}, "2110-03-29T00:11:59.258405+05:30"),
        line(start, "message", {"role": "user"}, "2026-11-01T10:00:00.123+00:00"),
        line(start, "message", {"role": "user"}, "٢٠٢٦-11-01T10:00:00+00:00"),
        line(start, "message", {"role": "user"}, 12),
        line(start, "message", {"role": "user"}, "2026-11-01T10:00:00+05:30", meta={"context": False}),
        line(start, "message", {"role": "user"}, d, meta={"context": 0}),
        line(start, "message", {"role": "user"}, d, meta=[1]),
        line(start, "tool_call", {"calls": [{"id": "c"}, {"id": "d"}]}, d),
        line(start, "tool_call", {"calls": "no"}, d),
        line(start, "tool_result", {"results": ["ok", {"message": "x", "kind": "E"}]}, d),
        line(start, "tool_result", {"results": [{"message": "x"}]}, d),
        line(start, "tool_result", {"results": "no"}, d),
        line(start, "event", {"name": "tool.error", "data": {}}, d),
        line(start, "event", {"name": "run", "data": {"status": "error", "usage": usage}}, d),
        line(start, "event", {"name": "loop.result", "data": {"error": "boom"}}, d),
        line(start, "event", {"name": "loop.result", "data": {"error": ""}}, d),
        line(start, "event", {"name": "run", "data": {"usage": usage, "model": "m:" + "x" * 300}}, d),
        line(start, "event", {"name": "run", "data": {"usage": {"total_tokens": 9}}}, d),
        line(start, "event", {"name": "run", "data": {"usage": {"prompt_tokens": True}, "model": ""}}, d),
        line(start, "event", {"name": "model_switch", "data": {"model": "other"}}, d),
        line(start, "event", {"name": 4, "data": []}, d),
        line(start, "event", {"name": "n" * 300, "data": {}}, d),
        line(start, "error", {"message": "context_length_exceeded"}, d),
        line(start, "anchor", {"name": "memory/x", "state": {}}, d),
        line(start, "anchor", {"name": "phase/odd", "state": {"a": 1}}, "2026-10-01T10:00:00-03:00"),
        # Anchors: counted without an Entry (fastlane.anchor) only where the full path would agree.
        line(start, "anchor", {"name": "phase/naive"}, "2026-11-01T10:00:00"),
        line(start, "anchor", {"name": "phase/z", "state": "s"}, "2026-11-01T10:00:00Z"),
        line(start, "anchor", {"name": "phase/quiet", "state": {}}, d, meta={"context": False}),
        line(start, "anchor", {"name": "phase/meta"}, d, meta=[1]),
        line(start, "anchor", {"name": "phase/wide", "state": {"n": 2**70}}, d),
        line(start, "anchor", {"name": "phase/old"}, timestamp=1_790_000_000),
        line(start, "anchor", {"name": "phase/bad-date"}, "yesterday"),
        line(start, "anchor", {"name": "phase/no-date"}),
        line(start, "anchor", {"name": 7, "state": {"a": 1}}, d),
        line(start, "anchor", {"state": {"a": 1}}, d),
        line(start, "anchor", ["not", "an", "object"], d),
        line(2**63, "anchor", {"name": "phase/far"}, d),
        line(start, "anchor", {"name": "spill/x", "state": {"a": "x" * 400}}, d),
        line(start, "anchor", {"name": "auto_handoff/context_overflow", "state": {}}, d),
        line(start, "anchor", {"name": "phase/deep", "state": deep(300)}, d),
        # Anchors the compiled lane reads itself (tapes/_lane.c), or leaves to fastlane.anchor.
        line(start, "anchor", {"name": 'phase/"q"\n', "state": {"k\tey": "v\u00e9\n"}}, d),
        line(
            start,
            "anchor",
            {"name": "phase/é", "state": [1, "é", None, 1.5, -0.0]},
            "2026-11-01T10:00:00.5-00:00",
        ),
        line(start, "anchor", {"name": "memory/early", "state": ""}, "2026-11-01 10:00:00+00:00"),
        line(start, "anchor", {"name": "phase/ctx", "state": 0}, d, meta={"context": "false"}),
        line(start, "anchor", {"name": "phase/digits", "state": {"t": "1" * 20}}, d),
        line(start, "anchor", {"name": "phase/later", "state": None}, "2027-01-01T00:00:00.000001Z"),
        line(start, "anchor", {"name": "phase/earlier", "state": False}, "2025-01-01T00:00:00+00:00"),
        line(start, "anchor", {"name": "phase/east", "state": {}}, "2026-11-01T10:00:00+09:00"),
        b'{"id": 5, "kind": "anchor", "payload": {"name": "phase/nan", "state": {"x": NaN}}, "date": "'
        + d.encode()
        + b'"}\n',
        line(start, "system", {"content": "s"}, d),
        line(start, "something_new", {}, d),
    ]
    rng.shuffle(found)
    return found


def tape_text(path: Path, entries: int, seed: str) -> bytes:
    """A generated session (the real turn pattern) with odd lines strewn through it."""
    rng = random.Random(seed)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    turns = bub_turns(rng, 1, start, handoff_every=30)
    out = [bub_line(e).encode() for e in itertools.islice(turns, entries)]
    for at in sorted(rng.sample(range(len(out)), 6), reverse=True):
        out[at:at] = odd_lines(rng, at)
    return b"".join(out)


def full_path_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every line down the full path: the agent's own reading rules (sources.bub_lines), an Entry each."""
    monkeypatch.setattr(blocklane, "native", None)
    monkeypatch.setattr(fastlane, "PLAIN_KINDS", frozenset())
    monkeypatch.setattr(fastlane, "anchor", lambda *line: False)


@pytest.mark.parametrize("block, batch", [(bub.BLOCK, index.BATCH), (4096, 700), (700, 97)])
def test_the_bulk_path_indexes_exactly_what_the_full_path_does_with_odd_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int, batch: int
) -> None:
    root = tmp_path / "bub"
    shutil.copytree(FIXTURES / "bub", root)
    (root / f"{NAME}.jsonl").write_bytes(tape_text(root, 3000, "blocks") + b'{"id": 99, "kind": "mes')
    monkeypatch.setattr(bub, "BLOCK", block)
    monkeypatch.setattr(index, "BATCH", batch)
    monkeypatch.setattr(index._Run, "size", batch)
    fast = indexed("fast", root)
    full_path_only(monkeypatch)
    other = indexed("other", root)
    assert fast.keys() == other.keys() and len(fast) >= 8
    for rel in fast:
        assert fast[rel] == other[rel], rel
    stats, anchors, every = fast[f"{NAME}.jsonl"]
    # 8 of the odd lines are unreadable for Bub too (its json.loads reads a NaN date).
    assert stats["unreadable"] >= 6 * 8 and stats["errors"] >= 6 * 6 and len(anchors) >= 6
    assert any(r.name == "r" * 60 for r in every)  # a message's role is its name, whole


def test_appends_a_few_lines_at_a_time_index_what_one_read_does(tmp_path: Path) -> None:
    whole, grown = tmp_path / "whole", tmp_path / "grown"
    whole.mkdir()
    grown.mkdir()
    text = tape_text(tmp_path, 2000, "appends")
    (whole / f"{NAME}.jsonl").write_bytes(text)
    path = grown / f"{NAME}.jsonl"
    path.write_bytes(b"")
    discovery.sync(parse_sources([f"grown=bub:{grown}"]))
    t = Tape.objects.get(source="grown")
    rng = random.Random(3)
    at = 0
    while at < len(text):  # cut anywhere, mid-line included: the agent is still writing
        step = rng.randrange(1, 40_000)
        with path.open("ab") as f:
            f.write(text[at : at + step])
        at += step
        index.refresh(t)
    grown_index = indexed("grown", grown, afresh=False)[f"{NAME}.jsonl"]
    whole_index = indexed("whole", whole)[f"{NAME}.jsonl"]
    for stats in (grown_index[0], whole_index[0]):
        stats.pop("mtime_ns")
    assert grown_index[0] == whole_index[0]
    assert grown_index[1:] == whole_index[1:]


def test_the_tape_page_and_api_show_the_same_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_client
) -> None:
    path = tmp_path / "bub" / f"{NAME}.jsonl"
    path.parent.mkdir()
    path.write_bytes(tape_text(tmp_path, 1500, "pages"))
    # Quiet for an hour: a handoff's wait ("the tape changed 1.2 s ago") is the same at both reads.
    os.utime(path, (time.time() - 3600, time.time() - 3600))

    def pages(label: str) -> list[str]:
        discovery.sync(parse_sources([f"{label}=bub:{path.parent}"]))
        key = Tape.objects.get(source=label).key
        urls = [f"/tapes/{key}/", f"/tapes/{key}/?end=1", f"/tapes/{key}/?at=700", f"/api/tapes/{key}"]
        texts = []
        for url in urls:
            response = viewer_client.get(url)
            assert response.status_code == 200, url
            text = response.content.decode().replace(key, "KEY").replace(label, "LABEL")
            texts.append(CSRF.sub("TOKEN", text))
        return texts

    fast = pages("fast")
    full_path_only(monkeypatch)
    assert pages("slow") == fast
