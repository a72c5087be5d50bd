"""Two Tapeview edits of one file with the same base version: exactly one is saved, the other is stale."""

from __future__ import annotations

import errno
import multiprocessing
import os
import shutil
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_admin.stores import (
    araliya_kv,
    bub_zone,
    bub_zone_write,
    files,
    locks,
    nanobot_memory,
    yachiyo_memory,
)
from memory_admin.stores.model import StaleEdit, StoreBusy, StoreError, version_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOW = datetime(2026, 11, 23, 4, 5, 6, tzinfo=UTC)
WRITERS = 8
ROUNDS = 10  # the lost update showed in 6 of 150 rounds: several rounds of 8 writers each
# Write = (writer number) -> None; it raises StaleEdit when another writer won.
Write = Callable[[int], object]


@pytest.fixture
def slow_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync and rename take a while, as on a busy disk: the window between a writer's last check
    and its rename is wide open, so writers that are not kept apart overwrite each other."""
    real_fsync, real_replace = os.fsync, os.replace

    def slow_fsync(fd: int) -> None:
        time.sleep(0.005)
        real_fsync(fd)

    def slow_replace(src: str, dst: str) -> None:
        time.sleep(0.005)
        real_replace(src, dst)

    monkeypatch.setattr(files.os, "fsync", slow_fsync)
    monkeypatch.setattr(files.os, "replace", slow_replace)


def race(writers: int, write: Write) -> tuple[list[int], list[int]]:
    """Start every writer at once; the numbers of those that saved and of those that were stale."""
    start = threading.Barrier(writers)
    saved: list[int] = []
    stale: list[int] = []
    errors: list[BaseException] = []

    def run(n: int) -> None:
        start.wait()
        try:
            write(n)
        except StaleEdit:
            stale.append(n)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        else:
            saved.append(n)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return saved, stale


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".lock")))


def test_of_many_conditional_rewrites_with_one_base_exactly_one_lands(
    tmp_path: Path, slow_disk: None
) -> None:
    path = tmp_path / "MEMORY.md"
    for round_ in range(ROUNDS):
        path.write_bytes(b"round %d\n" % round_)
        base = version_of(path.read_bytes())

        saved, stale = race(
            WRITERS, lambda n, base=base: files.replace_if_unchanged(path, b"writer %d\n" % n, base)
        )

        assert len(saved) == 1 and len(stale) == WRITERS - 1
        assert path.read_bytes() == b"writer %d\n" % saved[0]
    assert leftovers(tmp_path) == []


def _rewrite_in_a_process(path: str, base: str, n: int, start, results) -> None:
    start.wait()
    try:
        files.replace_if_unchanged(Path(path), b"process %d\n" % n, base)
    except StaleEdit:
        results.put((n, "stale"))
    else:
        results.put((n, "saved"))


def test_writers_in_separate_processes_are_kept_apart_too(tmp_path: Path, slow_disk: None) -> None:
    path = tmp_path / "kv.json"
    path.write_bytes(b"{}")
    ctx = multiprocessing.get_context("fork")
    start, results = ctx.Barrier(4), ctx.Queue()
    args = (str(path), version_of(b"{}"))
    procs = [ctx.Process(target=_rewrite_in_a_process, args=(*args, n, start, results)) for n in range(4)]
    for proc in procs:
        proc.start()
    outcomes = dict(results.get(timeout=30) for _ in procs)
    for proc in procs:
        proc.join(timeout=30)

    saved = [n for n, outcome in outcomes.items() if outcome == "saved"]
    assert len(saved) == 1 and list(outcomes.values()).count("stale") == 3
    assert path.read_bytes() == b"process %d\n" % saved[0]


def test_araliya_kv_sets_with_one_base_keep_exactly_one_value(tmp_path: Path, slow_disk: None) -> None:
    shutil.copytree(FIXTURES / "araliya", tmp_path / "work")
    ref = next(r for r in araliya_kv.discover(tmp_path / "work") if r.note.startswith("197"))
    base = araliya_kv.read(ref).version

    saved, _ = race(WRITERS, lambda n: araliya_kv.set_value(ref, "mood", f"writer {n}", base, now=NOW))

    assert len(saved) == 1
    assert dict(araliya_kv.read(ref).items)["mood"] == f"writer {saved[0]}"


def test_yachiyo_adds_with_one_base_keep_exactly_one_entry(tmp_path: Path, slow_disk: None) -> None:
    shutil.copytree(FIXTURES / "yachiyo_memory", tmp_path / "yachiyo")
    (ref,) = yachiyo_memory.discover(tmp_path / "yachiyo")
    before = yachiyo_memory.read(ref)

    saved, _ = race(
        WRITERS, lambda n: yachiyo_memory.add_entry(ref, f"fact from writer {n}", [], before.version, now=NOW)
    )

    after = [e.content for e in yachiyo_memory.read(ref).items]
    assert len(saved) == 1 and len(after) == len(before.items) + 1
    assert f"fact from writer {saved[0]}" in after


def test_nanobot_edits_with_one_base_keep_exactly_one_text(tmp_path: Path, slow_disk: None) -> None:
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", tmp_path / "nanobot")
    ref = next(
        r for r in nanobot_memory.discover(tmp_path / "nanobot") if r.kind == nanobot_memory.MEMORY_KIND
    )
    base = nanobot_memory.read(ref).version

    saved, _ = race(WRITERS, lambda n: nanobot_memory.write(ref, f"written by {n}\n", base))

    assert len(saved) == 1 and ref.path.read_text() == f"written by {saved[0]}\n"


def test_bub_zone_edits_with_one_expected_version_append_exactly_one_zone(tmp_path: Path) -> None:
    tape = tmp_path / "hand_memory_zone.jsonl"
    shutil.copyfile(FIXTURES / "bub" / "hand_memory_zone.jsonl", tape)
    os.utime(tape, (0, 0))  # long idle
    quiet = {"quiet_seconds": 0, "now": NOW}

    saved, stale = race(WRITERS, lambda n: bub_zone_write.write_long_term(tape, f"writer {n}", 8, **quiet))

    zone = bub_zone.current_zone(tape)
    assert len(saved) == 1 and len(stale) == WRITERS - 1
    assert (zone.version, zone.long_term) == (9, f"writer {saved[0]}")
    assert leftovers(tmp_path) == []


def test_a_full_disk_during_the_temp_write_leaves_the_file_and_the_folder_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "memory.json"
    path.write_bytes(b'{"entries": []}')
    before = sorted(os.listdir(tmp_path))

    def disk_full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m:
        m.setattr(files.os, "write", disk_full)
        with pytest.raises(OSError) as failed:
            files.replace_if_unchanged(path, b'{"entries": [1]}', version_of(path.read_bytes()))

    assert failed.value.errno == errno.ENOSPC
    assert path.read_bytes() == b'{"entries": []}'
    assert sorted(os.listdir(tmp_path)) == before


def test_a_full_disk_during_a_store_edit_keeps_the_agents_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(FIXTURES / "yachiyo_memory", tmp_path / "yachiyo")
    (ref,) = yachiyo_memory.discover(tmp_path / "yachiyo")
    before = ref.path.read_bytes()

    def disk_full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as m:
        m.setattr(files.os, "write", disk_full)
        with pytest.raises(OSError):
            yachiyo_memory.add_entry(ref, "never lands", [], version_of(before), now=NOW)

    assert ref.path.read_bytes() == before
    assert os.listdir(ref.path.parent) == ["memory.json"]


def test_the_lock_is_a_file_of_its_own_beside_the_target_and_gone_afterwards(tmp_path: Path) -> None:
    path = tmp_path / "kv.json"
    path.write_bytes(b"{}")
    lock = locks.lock_path(path)
    assert (lock.parent, lock.name) == (tmp_path, ".kv.json.tapeview.lock")

    with locks.hold(path):
        assert lock.is_file() and path.read_bytes() == b"{}"
        with locks.hold(path):  # nested in one thread: the same hold
            pass
        assert lock.is_file()

    assert not lock.exists()


def test_a_writer_waiting_too_long_for_the_lock_is_told_to_retry(tmp_path: Path) -> None:
    path = tmp_path / "kv.json"
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with locks.hold(path):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait(10)
    try:
        with pytest.raises(StoreBusy), locks.hold(path, wait=0.05):
            pass
    finally:
        release.set()
        thread.join()


def test_a_symlink_planted_at_the_lock_name_is_refused(tmp_path: Path) -> None:
    path, elsewhere = tmp_path / "kv.json", tmp_path / "elsewhere"
    path.write_bytes(b"{}")
    locks.lock_path(path).symlink_to(elsewhere)

    with pytest.raises(StoreError, match="lock file"):
        files.replace_if_unchanged(path, b"[]", version_of(b"{}"))

    assert path.read_bytes() == b"{}" and not elsewhere.exists()
