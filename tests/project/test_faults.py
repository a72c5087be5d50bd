"""Faults beside live agents: a full disk, I/O errors, kill -9 mid-write, files changed under the index.

After each one every file holds its old content or its new, never a part of one and never
nothing, no temporary file of ours is left beside it, and the audit log says exactly what was
written: a row "written" for each version that reached a file, none for one that did not.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory_admin import catalog, writes
from memory_admin.models import MemoryStore
from memory_admin.stores import files
from memory_admin.stores.model import version_of
from memory_admin.versions import snapshot
from tapeview.accounts.audit import PENDING, Actor, record
from tapeview.accounts.models import AuditEvent
from tapeview.sources import WriteFailed, bub_append
from tapeview.tapes import discovery, handoff
from tapeview.tapes.models import Tape

from .killed_editor import label_of

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROJECT = Path(__file__).resolve().parents[2]
ACTOR = Actor("olga")
# 64 KB: more than the free end of a file's last page holds, so even an append needs a new page.
BIG = "A note too long for a full disk. " * 2000


# The stores of every family, and one write through each write path.


def place_sources(root: Path, settings) -> None:
    """Real memory files of every family and two Bub tapes under `root`, configured and indexed."""
    (root / "bub").mkdir()
    for name in ("hand_memory_zone.jsonl", "session_realistic.jsonl"):
        shutil.copy(FIXTURES / "bub" / name, root / "bub" / name)
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", root / "nanobot")
    shutil.copytree(FIXTURES / "yachiyo_memory", root / "yachiyo")
    shutil.copytree(FIXTURES / "araliya", root / "araliya")
    settings.TAPEVIEW_SOURCES = (
        f"bub=bub:{root / 'bub'},nanobot=nanobot:{root / 'nanobot'},"
        f"yachiyo=yachiyo:{root / 'yachiyo' / 'data'},araliya=araliya:{root / 'araliya'}"
    )
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    discovery.sync()
    catalog.sync_stores()


@dataclass(frozen=True)
class Target:
    """What one write path writes to: its file, and the subject of its audit rows."""

    path: Path
    subject: str
    store: MemoryStore | None = None  # None for a handoff: a tape, not a memory store


def store_of(kind: str) -> Target:
    store = MemoryStore.objects.filter(kind=kind).order_by("rel").first()
    return Target(Path(store.path), f"store:{store.key}", store)


def session_tape() -> Target:
    tape = Tape.objects.get(name="session_realistic", role="tape")
    return Target(Path(tape.path), f"tape:{tape.key}")


def edit_memory_md(t: Target, text: str = "# Long-term memory\n\n" + BIG) -> object:
    return writes.save_text(t.store, text, snapshot(t.store).version, ACTOR)


def add_yachiyo_entry(t: Target) -> object:
    base = snapshot(t.store).version
    return writes.entry_write(t.store, ACTOR, "add", base, content="The NAS is at 10.0.0.5", keywords=["nas"])


def set_araliya_kv(t: Target) -> object:
    return writes.kv_write(t.store, ACTOR, "set", snapshot(t.store).version, key="nas", value=BIG[:4000])


def write_zone_long_term(t: Target) -> object:
    return writes.zone_write(t.store, ACTOR, "long_term", snapshot(t.store).version, text=BIG)


def hand_off(t: Target) -> object:
    return handoff.write(Tape.objects.get(path=str(t.path)), "phase/faults", ACTOR, summary=BIG)


# name: (the target, the write, the module whose os calls that write makes)
WRITE_PATHS: dict[str, tuple[Callable[[], Target], Callable[[Target], object], object]] = {
    "nanobot MEMORY.md edit": (lambda: store_of("nanobot.memory"), edit_memory_md, files),
    "yachiyo entry add": (lambda: store_of("yachiyo.memory"), add_yachiyo_entry, files),
    "araliya kv set": (lambda: store_of("araliya.kv"), set_araliya_kv, files),
    "Bub zone long-term write": (lambda: store_of("bub.zone"), write_zone_long_term, bub_append),
    "Bub handoff": (session_tape, hand_off, bub_append),
}


def temp_files(root: Path) -> list[Path]:
    return sorted(root.rglob(f"*{files.TEMP_SUFFIX}"))


def outcomes(t: Target) -> list[str]:
    return [e.outcome_text for e in AuditEvent.objects.filter(subject=t.subject).order_by("id")]


def assert_nothing_written(t: Target, before: bytes, root: Path, failure: WriteFailed, *why: str) -> None:
    """The file as it was, no temporary file, a clear error, and an audit log that says not written."""
    assert t.path.read_bytes() == before
    assert temp_files(root) == []
    assert any(w in str(failure) for w in why), str(failure)
    if t.store is not None:
        assert outcomes(t) == [f"failed: {failure}"[:308]]
    else:
        # A handoff's row is made once it is on the tape: none claims a write that did not happen.
        assert not AuditEvent.objects.filter(subject=t.subject, outcome=AuditEvent.WRITTEN).exists()


# ENOSPC on a real small filesystem.


@dataclass
class SmallDisk:
    """A folder on a filesystem of its own, and a way to fill that filesystem up."""

    root: Path
    real: bool  # a tmpfs mounted here; else os.write is wrapped to say the disk is full
    monkeypatch: pytest.MonkeyPatch

    def fill(self) -> None:
        if not self.real:
            self.monkeypatch.setattr(os, "write", _full_under(self.root, os.write))
            return
        with open(self.root / "filler", "wb", buffering=0) as f:
            for chunk in (1 << 16, 4096, 1):
                try:
                    while True:
                        f.write(b"\0" * chunk)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise


def _full_under(root: Path, real_write: Callable[[int, bytes], int]) -> Callable[[int, bytes], int]:
    def write(fd: int, data: bytes) -> int:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if target.startswith(str(root)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    return write


@pytest.fixture
def small_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmallDisk]:
    """A 2 MB tmpfs mounted for the test when we are root (CI is); elsewhere, or where mounting is
    refused, a folder whose writes through os.write fail with ENOSPC. Never a skip."""
    root = tmp_path / "disk"
    root.mkdir()
    mounted = False
    if os.geteuid() == 0:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", str(root)], capture_output=True
        )
        mounted = done.returncode == 0
    try:
        yield SmallDisk(root, mounted, monkeypatch)
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(root)], check=True)


@pytest.mark.django_db
@pytest.mark.parametrize("name", WRITE_PATHS)
def test_a_full_disk_leaves_the_file_as_it_was_with_a_clear_error_and_not_written_in_the_log(
    small_disk: SmallDisk, settings, name: str
) -> None:
    """The disk is a real tmpfs filled up, so the kernel answers ENOSPC (or writes short). Where
    the test is not root, or mounting is refused, os.write is wrapped to raise ENOSPC for files
    on that folder instead (the fallback; the test never skips)."""
    place_sources(small_disk.root, settings)
    target_of, attempt, _ = WRITE_PATHS[name]
    t = target_of()
    before = t.path.read_bytes()
    small_disk.fill()
    with pytest.raises(WriteFailed) as failed:
        attempt(t)
    # A tape's append fills the free end of its last page first: a short write, then taken back.
    why = ("No space left on device", "bytes were written); the tape was cut back")
    assert_nothing_written(t, before, small_disk.root, failed.value, *why)


# EIO at each step of each write path.


class FailingOs:
    """The os module as one module sees it, where the `nth` call of one function fails with EIO."""

    def __init__(self, name: str, nth: int) -> None:
        self.name, self.nth, self.calls = name, nth, 0

    def __getattr__(self, attr: str) -> object:
        real = getattr(os, attr)
        if attr != self.name:
            return real

        def call(*args: object, **kwargs: object) -> object:
            self.calls += 1
            if self.calls == self.nth:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return real(*args, **kwargs)

        return call


# (function, which call of it fails, whether the new version is in the file afterwards)
FILE_STEPS = [
    ("write", 1, False),  # the temporary file's bytes
    ("fsync", 1, False),  # the temporary file to disk
    ("replace", 1, False),  # the rename over the old file
    ("fsync", 2, True),  # the folder, after the rename: the new file is in place already
]
EIO_CASES = [
    pytest.param(name, fn, nth, lands, id=f"{name}-{fn}{nth}")
    for name, (_, _, module) in WRITE_PATHS.items()
    for fn, nth, lands in (FILE_STEPS if module is files else [("write", 1, False)])
]


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "fn", "nth", "lands"), EIO_CASES)
def test_an_io_error_at_each_step_leaves_the_old_file_or_the_new_and_the_log_says_which(
    tmp_path: Path, settings, monkeypatch: pytest.MonkeyPatch, name: str, fn: str, nth: int, lands: bool
) -> None:
    place_sources(tmp_path, settings)
    target_of, attempt, module = WRITE_PATHS[name]
    t = target_of()
    before = t.path.read_bytes()
    failing = FailingOs(fn, nth)
    monkeypatch.setattr(module, "os", failing)
    if lands:
        attempt(t)
        monkeypatch.undo()
        assert failing.calls >= nth  # the step was reached, and failed
        now = t.path.read_bytes()
        assert now != before and temp_files(tmp_path) == []
        event = AuditEvent.objects.get(subject=t.subject)
        assert (event.outcome, event.after) == (AuditEvent.WRITTEN, version_of(now))
        return
    with pytest.raises(WriteFailed) as failed:
        attempt(t)
    monkeypatch.undo()
    assert failing.calls >= nth
    assert_nothing_written(t, before, tmp_path, failed.value, "Input/output error")


def git_workspace(root: Path) -> Path:
    """The nanobot workspace under `root` with its own git store, as nanobot's GitStore makes it."""
    from dulwich import porcelain

    workspace = root / "nanobot" / "workspace"
    porcelain.init(str(workspace))
    porcelain.add(
        str(workspace), paths=[str(workspace / p) for p in ("SOUL.md", "USER.md", "memory/MEMORY.md")]
    )
    porcelain.commit(str(workspace), message=b"init: nanobot memory store", author=b"nanobot <nanobot@dream>")
    return workspace


@pytest.mark.django_db
@pytest.mark.parametrize("nth", range(1, 7))  # a commit here renames 6 files into .git
def test_an_io_error_in_the_git_commit_leaves_the_edit_saved_written_in_the_log_and_the_repo_whole(
    tmp_path: Path, settings, monkeypatch: pytest.MonkeyPatch, nth: int
) -> None:
    """Each file dulwich writes (blob, trees, commit, branch, index) is a lock file renamed into
    place: the nth of those renames fails. The edit is in MEMORY.md already, so it stays saved."""
    import dulwich.file
    from dulwich.repo import Repo

    place_sources(tmp_path, settings)
    workspace = git_workspace(tmp_path)
    with Repo(str(workspace)) as repo:
        head = repo.head()
    t = store_of("nanobot.memory")
    failing = FailingOs("replace", nth)
    monkeypatch.setattr(dulwich.file, "os", failing)
    edit_memory_md(t)
    monkeypatch.undo()
    assert failing.calls >= nth
    now = t.path.read_bytes()
    assert now == ("# Long-term memory\n\n" + BIG + "\n").encode()
    event = AuditEvent.objects.get(subject=t.subject)
    assert (event.outcome, event.after) == (AuditEvent.WRITTEN, version_of(now))
    assert sorted((workspace / ".git").rglob("*.lock")) == []
    with Repo(str(workspace)) as repo:
        commit = repo[repo.head()]
        blob = repo[repo[commit.tree].lookup_path(repo.__getitem__, b"memory/MEMORY.md")[1]]
        # HEAD stays where it was, or names a whole commit holding exactly the new text.
        assert repo.head() == head or blob.data == now


# kill -9 mid-edit, in a loop.

ROUNDS = 20


def _gone(pid: int, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.002)
    raise AssertionError(f"process {pid} outlived SIGKILL")


def test_kill_9_mid_edit_leaves_old_or_new_no_temp_file_and_an_audit_row_for_every_version(
    tmp_path: Path,
) -> None:
    """A process makes MEMORY.md edits through writes.save_text in a loop and is SIGKILLed at a
    random moment, 20 times; after each kill one more edit goes through (in a process that lives).

    The file must always be exactly one edit's text (or the original); that edit must clean up
    any temporary file the killed one left; and in the audit log the rows that say "written"
    must chain from the original version to the last one (each row's before is the previous
    row's after), covering every version the file was seen to hold, with none left pending.
    """
    workspace = tmp_path / "nanobot"
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", workspace)
    memory = workspace / "workspace" / "memory" / "MEMORY.md"
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAPEVIEW_")}
    env |= {
        "DJANGO_SETTINGS_MODULE": "tapeview.settings",
        "TAPEVIEW_HOME": str(home),
        "TAPEVIEW_SOURCES": f"nb=nanobot:{workspace}",
        "PYTHONPATH": str(PROJECT),
    }
    migrate = [sys.executable, "-m", "tapeview", "migrate", "--noinput", "-v", "0"]
    subprocess.run(migrate, env=env, cwd=PROJECT, check=True, capture_output=True)
    original = memory.read_bytes()
    seen: list[str] = [version_of(original)]  # every version the file was seen to hold, in order

    def look() -> bytes:
        data = memory.read_bytes()
        if version_of(data) != seen[-1]:
            seen.append(version_of(data))
        return data

    editor = subprocess.Popen(
        [sys.executable, "-c", "from tests.project.killed_editor import main; main()"],
        env=env,
        cwd=PROJECT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )

    def ask(command: str) -> str:
        editor.stdin.write(command + "\n")
        editor.stdin.flush()
        answer = editor.stdout.readline().strip()
        assert answer, f"the editor stopped answering ({command})"
        return answer

    killed_with_residue = 0
    try:
        assert ask("edit first").startswith("edited ")
        look()
        for n in range(ROUNDS):
            pid = int(ask(f"loop r{n}").removeprefix("child "))
            until = time.monotonic() + random.uniform(0.05, 0.5)
            while time.monotonic() < until:
                look()
            os.kill(pid, signal.SIGKILL)
            _gone(pid)
            data = look()
            assert data == original or label_of(data.decode()) is not None, "a partial MEMORY.md"
            killed_with_residue += bool(temp_files(workspace))
            assert ask(f"edit after-r{n}") == f"edited {version_of(memory.read_bytes())}"
            assert label_of(look().decode()) == f"after-r{n}"
            assert temp_files(workspace) == [], "the next edit leaves no temporary file behind"
    finally:
        editor.stdin.close()
        editor.wait(timeout=10)

    with sqlite3.connect(home / "tapeview.sqlite3") as db:
        rows = db.execute(
            "SELECT outcome, before, after, why FROM accounts_auditevent WHERE action = 'edit' ORDER BY id"
        ).fetchall()
    assert not [r for r in rows if r[0] == PENDING], "every intent of a killed writer is settled"
    written = [(before, after) for outcome, before, after, _ in rows if outcome == AuditEvent.WRITTEN]
    assert written[0][0] == seen[0] and written[-1][1] == version_of(memory.read_bytes())
    for (_, after), (before, _) in zip(written, written[1:], strict=False):
        assert before == after, "a row says written for a version the next write did not find"
    assert set(seen) <= {seen[0]} | {after for _, after in written}, "a version the file held has no row"
    others = {after for outcome, _, after, _ in rows if outcome != AuditEvent.WRITTEN and after}
    assert not others & set(seen)
    settled_later = [why for outcome, _, _, why in rows if why.startswith(("confirmed later", "its writer"))]
    print(f"{len(seen)} versions seen, {len(written)} written rows, {len(settled_later)} settled by the "
          f"next edit, {killed_with_residue} kills left a temporary file")  # fmt: skip
    assert settled_later, "no kill landed inside a write: the test proved nothing"


# Leftovers are never stores, and go with the next write.


@pytest.mark.django_db
def test_temporary_files_of_killed_writers_are_not_stores_and_the_next_write_removes_them(
    tmp_path: Path, settings
) -> None:
    place_sources(tmp_path, settings)
    t = store_of("nanobot.memory")
    folder = t.path.parent
    residue = [folder / ".MEMORY.md.k1ll3d_x.tapeview.tmp", folder / ".MEMORY.md.a0b1c2d3.tapeview.tmp"]
    for path in residue:
        path.write_text("# half a MEMORY.md, as a killed writer left it")
    not_ours = folder / ".MEMORY.md.old.a0b1c2d3.tapeview.tmp"  # a temporary file of MEMORY.md.old
    not_ours.write_text("another file's")
    catalog.sync_stores()
    discovery.sync()
    assert not MemoryStore.objects.filter(path__contains=files.TEMP_SUFFIX).exists()
    assert not Tape.objects.filter(path__contains=files.TEMP_SUFFIX).exists()
    edit_memory_md(t)
    assert temp_files(tmp_path) == [not_ours]


# Pending intents of writers that stopped: settled by the next write.


def _reaped_pid() -> int:
    """The pid of a process that has ended."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.django_db
def test_an_intent_the_file_holds_is_written_and_one_it_does_not_is_not_written_once_its_writer_died(
    tmp_path: Path, settings
) -> None:
    place_sources(tmp_path, settings)
    t = store_of("nanobot.memory")
    now = snapshot(t.store).version

    def intent(after: str, writer: str) -> AuditEvent:
        event = record(ACTOR, "edit", subject=t.subject, target="MEMORY.md", after=after, outcome=PENDING)
        event.writer = writer
        event.save()
        return event

    gone = f"{socket.gethostname()} {_reaped_pid()}"
    landed = intent(now, gone)
    lost = intent("0123456789abcdef", gone)
    alive = intent("fedcba9876543210", f"{socket.gethostname()} {os.getpid()}")
    elsewhere = intent("fedcba9876543211", "another-host 1")
    # A writer at work whose expected version the file holds: maybe another write's (a zone's next
    # number, expected by two writes at once): left to its writer, which may yet be refused.
    at_work = intent(now, f"{socket.gethostname()} {os.getpid()}")
    edit_memory_md(t)
    for event in (landed, lost, alive, elsewhere, at_work):
        event.refresh_from_db()
    assert landed.outcome_text == "written: confirmed later: the file held its version"
    assert lost.outcome_text == "not written: its writer stopped before the file held its version"
    assert (alive.outcome, elsewhere.outcome, at_work.outcome) == (
        PENDING,
    ) * 3  # their writers may be at work


@pytest.mark.django_db
def test_the_audit_log_shows_each_rows_outcome(
    tmp_path: Path, settings, client, user_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    place_sources(tmp_path, settings)
    t = store_of("nanobot.memory")
    edit_memory_md(t)
    monkeypatch.setattr(files, "os", FailingOs("fsync", 1))
    with pytest.raises(WriteFailed):
        edit_memory_md(t, "# Long-term memory\n\nanother edit\n")
    monkeypatch.undo()
    client.force_login(user_factory("ada", "admin"))
    page = client.get("/audit/").content.decode()
    assert "<th>Outcome</th>" in page
    assert ">written</td>" in page and "failed: MEMORY.md could not be written (Input/output error)" in page


# A tape deleted, truncated or replaced between indexing and reading.


def _change(path: Path, change: str) -> list[dict]:
    """Change the tape's file; the entries it holds afterwards."""
    lines = path.read_bytes().splitlines(keepends=True)
    if change == "deleted":
        path.unlink()
        return []
    if change == "truncated":
        path.write_bytes(b"".join(lines[:3]))
    elif change == "cut mid-line":
        path.write_bytes(b"".join(lines[:3]) + lines[3][: len(lines[3]) // 2])
    elif change == "emptied":
        path.write_bytes(b"")
    elif change == "replaced":
        new = path.with_name(".new")
        shutil.copy(FIXTURES / "bub" / "fork_merged.jsonl", new)
        os.replace(new, path)
    return [json.loads(line) for line in path.read_bytes().splitlines(keepends=True) if line.endswith(b"\n")]


@pytest.mark.django_db
@pytest.mark.parametrize("refresh", [0, 3600], ids=["pages-index-first", "pages-read-old-offsets"])
@pytest.mark.parametrize("change", ["deleted", "truncated", "cut mid-line", "emptied", "replaced"])
def test_a_tape_changed_after_indexing_is_404_file_gone_or_its_new_content_never_500(
    viewer_client, served, settings, change: str, refresh: int
) -> None:
    tape = Tape.objects.get(name="session_realistic")
    key, path = tape.key, Path(tape.path)
    assert viewer_client.get(f"/api/tapes/{key}/entries", {"limit": 200}).status_code == 200
    settings.TAPEVIEW_REFRESH_SECONDS = refresh
    entries = _change(path, change)
    pages = [
        f"/tapes/{key}/",
        f"/tapes/{key}/?end=1",
        f"/tapes/{key}/context",
        f"/tapes/{key}/entries/2/",
        f"/tapes/{key}/entries/2/raw",
        f"/tapes/{key}/entries/90/",
        f"/api/tapes/{key}",
        f"/api/tapes/{key}/entries?limit=200",
        f"/api/tapes/{key}/entries/2",
        f"/api/tapes/{key}/entries/2/raw",
        f"/api/tapes/{key}/entries/90",
        f"/api/tapes/{key}/context",
    ]
    for url in pages:
        r = viewer_client.get(url)
        # A streamed answer is read to its end: a failure halfway would be a broken 200.
        body = (b"".join(r.streaming_content) if r.streaming else r.content).decode(errors="replace")
        assert r.status_code in (200, 404), (url, r.status_code, body[:500])
        if change == "deleted":
            assert r.status_code == 404 and "file is gone" in body.replace("&#x27;", "'"), url
    if change == "deleted":
        return
    listed = viewer_client.get(f"/api/tapes/{key}/entries", {"limit": 200}).json()["items"]
    readable = [(e["id"], e["kind"], e["payload"]) for e in listed if e["readable"]]
    assert readable == [(e["id"], e["kind"], e["payload"]) for e in entries], "the new content, only"
