"""A failed or short write by the guest writer leaves the tape exactly as it was, and says so."""

from __future__ import annotations

import errno
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tapeview.sources import bub_append
from tapeview.sources.bub_append import append, handoff
from tapeview.sources.model import WriteFailed

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bub"
DATE = "2026-11-23T08:00:00.123456+00:00"
# About the 40,400-byte handoff of the issue, of which a full disk let 7,470 bytes through.
SUMMARY = {"summary": "x" * 40_000}
AGENTS_LINE = b'{"id": 13, "kind": "event", "payload": {"name": "loop.start", "data": {}}, "meta": {}}\n'


def sample(tmp_path: Path, name: str = "reset_after_archive.jsonl") -> Path:
    path = tmp_path / name
    shutil.copyfile(FIXTURES / name, path)
    then = time.time() - 60
    os.utime(path, (then, then))
    return path


def failing_write(
    monkeypatch: pytest.MonkeyPatch, reaches: int, code: int = errno.ENOSPC, then=None
) -> list[int]:
    """os.write lets `reaches` bytes through (-1: all but one), runs `then`, and fails with `code`."""
    real_write = os.write
    sizes: list[int] = []

    def write(fd: int, data: bytes) -> int:
        sizes.append(len(data))
        part = data[: len(data) - 1 if reaches < 0 else reaches]
        if part:
            real_write(fd, part)
        if then is not None:
            then()
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(bub_append.os, "write", write)
    return sizes


@pytest.mark.parametrize("reaches", [0, 1, 7_470, -1], ids=["none", "one_byte", "issue_7470", "all_but_one"])
def test_a_full_disk_mid_write_leaves_the_tape_byte_for_byte_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reaches: int
) -> None:
    path = sample(tmp_path)
    before = path.read_bytes()
    sizes = failing_write(monkeypatch, reaches)

    with pytest.raises(WriteFailed) as failed:
        handoff(path, "phase/review", SUMMARY, now_iso=DATE)

    assert path.read_bytes() == before
    assert sizes[0] > 40_000
    assert failed.value.rolled_back and failed.value.errno == errno.ENOSPC
    assert str(failed.value) == (
        f"the write to the tape failed (No space left on device); the tape was cut back to its "
        f"{len(before):,} bytes: nothing was written"
    )


def test_an_io_error_on_the_first_write_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sample(tmp_path)
    before = path.read_bytes()
    failing_write(monkeypatch, 0, errno.EIO)

    with pytest.raises(WriteFailed) as failed:
        handoff(path, "phase/review", {}, now_iso=DATE)

    assert path.read_bytes() == before
    assert isinstance(failed.value, OSError) and failed.value.errno == errno.EIO
    assert "Input/output error" in str(failed.value) and "nothing was written" in str(failed.value)


def test_a_short_write_is_taken_back_not_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = sample(tmp_path)
    before = path.read_bytes()
    real_write = os.write
    calls: list[int] = []

    def short(fd: int, data: bytes) -> int:
        calls.append(len(data))
        return real_write(fd, data[:10])

    monkeypatch.setattr(bub_append.os, "write", short)

    with pytest.raises(WriteFailed, match=r"only 10 of [\d,]+ bytes were written\).*nothing was written"):
        handoff(path, "phase/x", {}, now_iso=DATE)

    assert len(calls) == 1
    assert path.read_bytes() == before


def test_a_failed_write_after_crash_residue_keeps_the_residue_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sample(tmp_path, "truncated_last_line_CRASH.jsonl")
    before = path.read_bytes()
    failing_write(monkeypatch, 1)  # just the newline that would have closed the residue

    with pytest.raises(WriteFailed):
        handoff(path, "phase/recovered", {}, now_iso=DATE, stopped_seconds=0, allow_stopped=True)

    assert path.read_bytes() == before and not before.endswith(b"\n")


def test_bytes_another_writer_appended_after_ours_are_never_cut_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sample(tmp_path)
    before = path.read_bytes()

    def agent_appends() -> None:
        with open(path, "ab") as f:
            f.write(AGENTS_LINE)

    failing_write(monkeypatch, 100, then=agent_appends)

    with pytest.raises(WriteFailed) as failed:
        handoff(path, "phase/x", {}, now_iso=DATE)

    after = path.read_bytes()
    assert not failed.value.rolled_back
    assert "another writer appended after them" in str(failed.value)
    assert after.startswith(before) and after.endswith(AGENTS_LINE)
    assert len(after) == len(before) + 100 + len(AGENTS_LINE)


def test_a_tape_reset_during_the_write_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = sample(tmp_path)
    before = path.read_bytes()
    archive = path.with_name(path.name + ".20261123T080000Z.bak")
    fresh = b'{"id": 1, "kind": "anchor", "payload": {"name": "session/start"}, "meta": {}}\n'

    def agent_resets() -> None:
        path.rename(archive)
        path.write_bytes(fresh)

    failing_write(monkeypatch, 50, then=agent_resets)

    with pytest.raises(WriteFailed, match="the tape was reset meanwhile"):
        handoff(path, "phase/x", {}, now_iso=DATE)

    assert path.read_bytes() == fresh
    assert archive.read_bytes()[: len(before)] == before


def test_a_failed_write_to_a_new_sidecar_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "9d11f561157e98d3__0b871d5e50e7c192__sidecar__memory.jsonl"
    failing_write(monkeypatch, 20)

    def one_event(nid: int) -> list[dict]:
        return [{"id": nid, "kind": "event", "payload": {"name": "n", "data": {}}, "meta": {}, "date": DATE}]

    with pytest.raises(WriteFailed):
        append(path, one_event, create=True)

    assert not path.exists()


def test_a_successful_write_is_one_complete_batch(tmp_path: Path) -> None:
    path = sample(tmp_path)
    before = path.read_bytes()

    written = handoff(path, "phase/review", SUMMARY, now_iso=DATE)

    added = path.read_bytes()[len(before) :].splitlines()
    assert [json.loads(raw)["id"] for raw in added] == [e["id"] for e in written]
