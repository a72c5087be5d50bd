"""The compiled lane (tapes/_lane.c) is built by `make setup`, and the index is the same without it."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from tapeview.sources import bub
from tapeview.sources.model import SCAN_PARSE_LIMIT
from tapeview.tapes import blocklane, packing
from tapeview.tapes.models import EntryChunk, Tape
from tests.conftest import FIXTURES
from tests.tapes.indexed import indexed

pytestmark = pytest.mark.django_db


def test_the_compiled_lane_is_built_by_setup() -> None:
    # A build that failed quietly would leave every tape to the Python lane, several times slower.
    assert blocklane.native is not None, "tapeview/tapes/_lane.c is not built: run `make setup`"


def test_without_the_compiled_lane_the_index_is_the_same_and_the_log_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "bub"
    shutil.copytree(FIXTURES / "bub", root)
    compiled = indexed("compiled", root)
    monkeypatch.setattr(blocklane, "native", None)
    blocklane._not_built.cache_clear()
    with caplog.at_level(logging.WARNING, logger="tapeview.index"):
        python = indexed("python", root)
    assert compiled.keys() == python.keys() and len(compiled) >= 8
    for rel in compiled:
        assert compiled[rel] == python[rel], rel
    said = [r.getMessage() for r in caplog.records if r.name == "tapeview.index"]
    assert len(said) == 1 and "compiled lane" in said[0] and "make setup" in said[0]


@pytest.mark.parametrize("block", [bub.BLOCK, 64 * 1024])
def test_lines_too_long_to_parse_are_indexed_the_same_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    root = tmp_path / "bub"
    root.mkdir()
    head = b'{"id": %d, "kind": "message", "payload": {"role": "user", "content": "'
    tail = b'"}, "meta": {}, "date": "2026-11-01T10:00:00+00:00"}\n'
    lines = [b'{"id": 1, "kind": "anchor", "payload": {"name": "session/start"}, "meta": {}, "date": null}\n']
    for i, size in enumerate([SCAN_PARSE_LIMIT - 1, SCAN_PARSE_LIMIT, SCAN_PARSE_LIMIT + 1, 5 << 20], 2):
        start = head % i
        lines += [start + b"x" * (size - len(start) - len(tail)) + tail, b"\n", (head % 99) + b"hi" + tail]
    (root / "a1b2c3d4e5f60718__0123456789abcdef.jsonl").write_bytes(b"".join(lines) + head % 100 + b"cut")
    monkeypatch.setattr(bub, "BLOCK", block)
    compiled = indexed("compiled", root)
    monkeypatch.setattr(blocklane, "native", None)
    python = indexed("python", root)
    assert compiled == python
    (stats, _, rows) = compiled["a1b2c3d4e5f60718__0123456789abcdef.jsonl"]
    # The lines past the limit are indexed by their heads, marked too long; the others read whole.
    assert [r.length for r in rows][1::2] == [
        SCAN_PARSE_LIMIT - 1,
        SCAN_PARSE_LIMIT,
        SCAN_PARSE_LIMIT + 1,
        5 << 20,
    ]
    assert stats["entries"] == 9 and stats["next_pos"] == 14  # blank lines have positions, no entries


def test_each_chunk_names_only_the_kinds_and_names_of_its_entries_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "bub"
    shutil.copytree(FIXTURES / "bub", root)

    def words(label: str) -> dict[str, list[tuple[set, set]]]:
        indexed(label, root)
        found = {}
        for tape in Tape.objects.filter(source=label).order_by("rel"):
            chunks = EntryChunk.objects.filter(tape=tape).order_by("first_pos")
            decoded = [packing.decode(bytes(c.columns), c.vocab) for c in chunks]
            found[tape.rel] = [(set(c.kinds), set(c.names)) for c in decoded]
            for c in decoded:  # every word is some entry's
                assert set(c.kinds) == {c.kinds[k] for k in c.columns["kind"]}, tape.rel
                assert set(c.names) == {c.names[n] for n in c.columns["name"]}, tape.rel
        return found

    compiled = words("compiled")
    monkeypatch.setattr(blocklane, "native", None)
    assert words("python") == compiled


def test_the_span_before_the_first_anchor_is_dated_in_utc_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader
) -> None:
    # No leading anchor, and a later line with an earlier date given with an offset: the compiled
    # lane's dates are UTC, the Python lane's kept the line's offset.
    root = tmp_path / "bub"
    root.mkdir()
    (root / "a1b2c3d4e5f60718__0123456789abcdef.jsonl").write_bytes(
        b'{"id": 1, "kind": "message", "payload": {"role": "user", "content": "hi"}, "meta": {},'
        b' "date": "2026-11-01T10:00:00+00:00"}\n'
        b'{"id": 2, "kind": "system", "payload": {"content": "s"}, "meta": {}, "date": "2026-11-01T11:00:00+02:00"}\n'
    )

    def phase_zero(label: str) -> tuple[dict, dict]:
        index = indexed(label, root)["a1b2c3d4e5f60718__0123456789abcdef.jsonl"]
        tape = Tape.objects.get(source=label)
        return index[0]["lead_phase"], reader.get(f"/api/tapes/{tape.key}/phases").json()["items"][0]

    compiled = phase_zero("compiled")
    monkeypatch.setattr(blocklane, "native", None)
    assert phase_zero("python") == compiled
    lead, shown = compiled
    assert (lead["started_at"], lead["ended_at"]) == (
        "2026-11-01T09:00:00+00:00",
        "2026-11-01T10:00:00+00:00",
    )
    assert (shown["started_at"], shown["ended_at"]) == ("2026-11-01T09:00:00Z", "2026-11-01T10:00:00Z")
