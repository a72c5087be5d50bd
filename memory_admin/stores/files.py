"""Guest file rewrites: atomic (temp file + rename in the same directory) and conditional."""

from __future__ import annotations

import logging
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import BinaryIO

from tapeview.sources.model import FileChanging, TapeNotFound, WriteFailed
from tapeview.sources.raw_bytes import open_bytes

from . import locks
from .model import StaleEdit, version_of

log = logging.getLogger(__name__)

TEMP_SUFFIX = ".tapeview.tmp"
READ_TRIES = 5
SETTLE = 0.02  # seconds after a file's last change before a read of it is taken as whole
# An empty file may be a rewrite's truncate whose write is still to come (a writer descheduled on a
# busy host): it is taken as empty once it has stayed so this long after its last change.
EMPTY_SETTLE = 1.0
# Called with (path, new version) just before a write changes the file: see `announcing`.
Announce = Callable[[Path, str], None]
_announce: ContextVar[Announce | None] = ContextVar("announce", default=None)


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes (from its copy, for another host's store: sources.raw_bytes); None if none.

    Agents rewrite these files in place (nanobot: truncate, then write), so a read may fall between
    the two: a read is kept only when the file did not change across it, nor within SETTLE (an empty
    one EMPTY_SETTLE) after its last change; else it is read again, and after READ_TRIES
    FileChanging says so.
    """
    for _ in range(READ_TRIES):
        try:
            with open_bytes(path) as f:
                seen = _identity(f)
                data = f.read()
                if seen is None or _settled(f, seen):
                    return data
        except TapeNotFound:
            raise  # another host's file with no copy here: unknown, not absent
        except FileNotFoundError:
            return None
    raise FileChanging(path)


def _identity(f: BinaryIO) -> tuple[int, int, int] | None:
    """What changes when a file is written: its inode, size and mtime (None: a copy, read whole)."""
    if getattr(f, "file_stat", None) is not None:
        return None
    st = os.fstat(f.fileno())
    return st.st_ino, st.st_size, st.st_mtime_ns


def _settled(f: BinaryIO, seen: tuple[int, int, int]) -> bool:
    """Whether the file read is as it was before the read, and stays so until SETTLE has passed
    since its last change (EMPTY_SETTLE for an empty file: a rewrite's truncate, its write to come)."""
    window = EMPTY_SETTLE if seen[1] == 0 else SETTLE
    young = min(window, window - (time.time_ns() - seen[2]) / 1e9)  # (a clock behind the file's: window)
    deadline = time.monotonic() + young
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, SETTLE))
        if _identity(f) != seen:
            return False
    return _identity(f) == seen


@contextmanager
def announcing(callback: Announce) -> Iterator[None]:
    """Within this block each write calls `callback(path, new_version)` right before it changes the
    file (a rewrite before its rename, a zone edit before its append).

    The last moment at which nothing has changed yet: the audit log notes there the version it
    is about to find, so a writer killed after the rename leaves a row that says what it wrote.
    If the callback raises, the rewrite is abandoned and the file stays as it was.
    """
    token = _announce.set(callback)
    try:
        yield
    finally:
        _announce.reset(token)


def announce(path: Path, version: str) -> None:
    """Tell the `announcing` block the version a write is about to give `path` (a rewrite's, an append's)."""
    callback = _announce.get()
    if callback is not None:
        callback(path, version)


def replace_if_unchanged(path: Path, data: bytes, expected_version: str, *, mode: int | None = None) -> str:
    """Write `data` to `path` only if the file still has `expected_version`; return the new version.

    The new bytes go to a temporary file in the same directory, are flushed to disk and renamed
    over the old file, so a reader (or a crash) sees the old file or the new one, never a mix.
    The file's mode is kept. Check, write and rename happen under the file's lock (locks.hold),
    so of two Tapeview writers with the same base only one writes; the other gets StaleEdit.
    A failed write (a full disk, an I/O error) raises WriteFailed and leaves the file as it was
    and no temporary file behind; one left by a writer killed mid-write goes at the next write.
    """
    with locks.hold(path):
        remove_residue(path)
        current = read_bytes(path)
        if version_of(current) != expected_version:
            raise StaleEdit(_text(current), version_of(current))
        if mode is None:
            mode = path.stat().st_mode & 0o7777 if current is not None else 0o644
        try:
            tmp = _write_temp(path, data, mode)
        except OSError as exc:
            raise _failed(path, exc) from exc
        try:
            announce(path, version_of(data))
            with _watching(path) as replaced:
                # The agent takes no lock: look once more, as late as possible (nothing slow
                # between this look and the rename), before replacing the file.
                current = read_bytes(path)
                if version_of(current) != expected_version:
                    raise StaleEdit(_text(current), version_of(current))
                os.replace(tmp, path)
                _after_rename(path, data, mode, replaced)
        except BaseException as exc:
            tmp.unlink(missing_ok=True)
            if isinstance(exc, OSError) and not isinstance(exc, WriteFailed | FileChanging):
                raise _failed(path, exc) from exc
            raise
    _fsync_dir(path.parent)
    return version_of(data)


@contextmanager
def _watching(path: Path) -> Iterator[list]:
    """Keep the file that is about to be replaced open, to see afterwards whether it was written.

    nanobot writes its memory files in place, with no lock (formats/nanobot.md §4): a write of
    its that lands between our last look and the rename goes into the file we replace.
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        yield []
        return
    try:
        st = os.fstat(fd)
        found: list = [fd, (st.st_size, st.st_mtime_ns)]
        yield found
    finally:
        os.close(fd)


def _after_rename(path: Path, data: bytes, mode: int, replaced: list) -> None:
    """Never lose the agent's write silently: a write into the old file in the window is put back,
    and the edit is reported as a conflict (StaleEdit) instead of as saved. A write the agent
    makes to the new file after the rename is its own later write (often built on ours)."""
    if replaced:
        fd, seen = replaced
        st = os.fstat(fd)
        if (st.st_size, st.st_mtime_ns) != seen:
            theirs = os.pread(fd, st.st_size, 0)
            os.replace(_write_temp(path, theirs, mode), path)
            raise StaleEdit(_text(theirs), version_of(theirs))


def temp_files(path: Path) -> list[Path]:
    """The temporary files of rewrites of `path` that are in its directory now."""
    # Exactly tempfile's names (prefix, 8 characters, suffix): a file named "MEMORY.md.old" has
    # temporaries of its own, and they are not MEMORY.md's.
    pattern = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]{{8}}{re.escape(TEMP_SUFFIX)}")
    try:
        entries = os.scandir(path.parent)
    except OSError:
        return []
    with entries:
        return [
            Path(e.path) for e in entries if pattern.fullmatch(e.name) and e.is_file(follow_symlinks=False)
        ]


def remove_residue(path: Path) -> None:
    """Remove the temporary files that writers of `path` killed mid-write left behind.

    Only under the file's lock: every temporary file is made and renamed by a writer holding
    it, so one found while we hold it has no live writer; it is residue, never the agent's.
    """
    with locks.hold(path):
        for tmp in temp_files(path):
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
            except OSError:
                log.warning("could not remove %s, left by a writer that stopped", tmp, exc_info=True)


def _write_temp(path: Path, data: bytes, mode: int) -> Path:
    """`data` in a new temporary file beside `path`, on disk; removed again if anything fails."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    tmp = Path(name)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def _failed(path: Path, exc: OSError) -> WriteFailed:
    why = exc.strerror or str(exc) or type(exc).__name__
    return WriteFailed(f"{path.name} could not be written ({why}): it was left as it was", errno=exc.errno)


def _fsync_dir(directory: Path) -> None:
    """Flush the rename to disk. The new file is in place already, and every reader sees it: a
    failure here is logged, not raised, since raising would report a write that happened as lost."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        log.warning("renamed a new version into %s, but could not flush the folder", directory, exc_info=True)
    finally:
        os.close(fd)


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")
