"""The raw bytes of a source file: opened read-only, streamed by byte span the same way for every kind.

Every reader opens its files here, so the bytes can come from somewhere else than this machine's
disk: inside `reading_from(files)` they come from `files` (a fleet's web tier reads the copies the
files' own host keeps in the database, tapes.copy_reader).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from .model import FileUnreadable, TapeNotFound

HEAD = 4096  # bytes of a first line that identify a file's generation (`head`)


class Files(Protocol):
    """Where a reader's files come from, when not from this machine's disk."""

    def open(self, path: Path) -> BinaryIO:
        """The file opened for reading bytes (seekable); FileNotFoundError when there is none."""

    def size(self, path: Path) -> int:
        """The file's size in bytes; FileNotFoundError when there is none."""


_files: ContextVar[Files | None] = ContextVar("tapeview_files", default=None)


@contextmanager
def reading_from(files: Files | None) -> Iterator[None]:
    """Open every file from `files` meanwhile (None: from this machine's disk, as outside)."""
    token = _files.set(files)
    try:
        yield
    finally:
        _files.reset(token)


def use(files: Files | None) -> None:
    """Open every file from `files` for the rest of the current context (a request: the middleware
    tapes.copy_reader.FilesMiddleware gives each its own)."""
    _files.set(files)


def open_bytes(path: Path) -> BinaryIO:
    """The file opened for reading bytes, wherever files come from now; FileNotFoundError if gone,
    FileUnreadable if this process may not read it."""
    files = _files.get()
    if files is not None:
        return files.open(Path(path))
    try:
        return open(path, "rb")  # noqa: SIM115 - callers close it
    except PermissionError as exc:
        raise FileUnreadable(path) from exc


def open_file(path: Path) -> BinaryIO:
    """The file opened for reading bytes; TapeNotFound when it is gone."""
    try:
        return open_bytes(path)
    except TapeNotFound:
        raise  # already says why
    except FileNotFoundError as exc:
        raise TapeNotFound(str(path)) from exc


@dataclass(frozen=True)
class FileStat:
    """What a reader needs of an open file's stat: its size, last change and identity."""

    size: int
    mtime: float
    ino: int
    dev: int


def stat_of(f: BinaryIO) -> FileStat:
    """The open file's stat; of a copy (another host's file), the file's as its host last copied it."""
    own = getattr(f, "file_stat", None)
    if own is not None:
        return own()
    st = os.fstat(f.fileno())
    return FileStat(st.st_size, st.st_mtime, st.st_ino, st.st_dev)


def size_of(path: Path) -> int:
    """The file's size, wherever files come from now; FileNotFoundError (an OSError) if gone."""
    files = _files.get()
    return os.stat(path).st_size if files is None else files.size(Path(path))


def exists(path: Path) -> bool:
    try:
        size_of(path)
    except OSError:
        return False
    return True


def read_raw(path: Path, offset: int, length: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The raw bytes of one entry, streamed; fewer when the file is shorter than the span."""
    with open_file(path) as f:
        require(f, offset + length)
        f.seek(offset)
        while length > 0:
            block = f.read(min(chunk, length))
            if not block:
                return
            length -= len(block)
            yield block


def require(f: BinaryIO, end: int) -> None:
    """Before a span up to `end` is streamed: a copy that lacks part of it (another host's file,
    tapes.copy_reader) says so now, before a byte goes out, rather than in the middle of a download."""
    check = getattr(f, "require", None)
    if check is not None:
        check(end)


def head(path: str | Path) -> str:
    """A fingerprint of the file's first line (its first HEAD bytes at most); "" while it has none.

    An append-only file unlinked and made again (a Bub reset) can get its old inode back and grow
    past the old size before anyone looks: its first line tells the new one apart.
    """
    try:
        with open(path, "rb") as f:
            data = f.read(HEAD)
    except OSError:
        return ""
    end = data.find(b"\n")
    if end < 0 and len(data) < HEAD:
        return ""  # no whole first line yet
    return hashlib.blake2b(data if end < 0 else data[: end + 1], digest_size=16).hexdigest()


def capped_lines(
    f: BinaryIO, limit: int, keep: int, block: int = 1 << 20
) -> Iterator[tuple[int, bytes, int]]:
    """(offset, bytes, length) of each line of an open file from where it stands, its newline
    included (the last line may have none). A line longer than `limit` is never held whole: its
    first `keep` bytes come instead, with its whole length, so memory stays bounded whatever the
    file holds (formats: a 100 MB record)."""
    offset, rest = f.tell(), b""
    while data := f.read(block):
        data, start = rest + data, 0
        while (end := data.find(b"\n", start)) >= 0:
            yield offset, data[start : end + 1], end + 1 - start
            offset, start = offset + end + 1 - start, end + 1
        rest = data[start:]
        if len(rest) > limit:
            length = len(rest) + skip_line(f)[0]
            yield offset, rest[:keep], length
            offset, rest = offset + length, b""
    if rest:
        yield offset, rest, len(rest)


def skip_line(f: BinaryIO) -> tuple[int, bool]:
    """Read past the rest of a line, its newline included: the bytes read, and whether a newline
    ended them (else the file did: the line is unfinished)."""
    length = 0
    while chunk := f.readline(1 << 20):
        length += len(chunk)
        if chunk.endswith(b"\n"):
            return length, True
    return length, False
