"""Guest file rewrites: atomic (temp file + rename in the same directory) and conditional."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from . import locks
from .model import StaleEdit, version_of


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def replace_if_unchanged(path: Path, data: bytes, expected_version: str, *, mode: int | None = None) -> str:
    """Write `data` to `path` only if the file still has `expected_version`; return the new version.

    The new bytes go to a temporary file in the same directory, are flushed to disk and renamed
    over the old file, so a reader (or a crash) sees the old file or the new one, never a mix.
    The file's mode is kept. Check, write and rename happen under the file's lock (locks.hold),
    so of two Tapeview writers with the same base only one writes; the other gets StaleEdit.
    A failed write leaves the file as it was and no temporary file behind.
    """
    with locks.hold(path):
        current = read_bytes(path)
        if version_of(current) != expected_version:
            raise StaleEdit(_text(current), version_of(current))
        if mode is None:
            mode = path.stat().st_mode & 0o7777 if current is not None else 0o644
        tmp = _write_temp(path, data, mode)
        try:
            # The agent takes no lock: look once more, as late as possible, before the rename.
            current = read_bytes(path)
            if version_of(current) != expected_version:
                raise StaleEdit(_text(current), version_of(current))
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    _fsync_dir(path.parent)
    return version_of(data)


def _write_temp(path: Path, data: bytes, mode: int) -> Path:
    """`data` in a new temporary file beside `path`, on disk; removed again if anything fails."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tapeview.tmp", dir=path.parent)
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


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", errors="replace")
