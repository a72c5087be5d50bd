"""Another host's files read from their copies in the database (a fleet; tapes.filecopy keeps them).

Readers of another host's tape or store read the copy (`reading`, `read_from_host`): every file a
reader opens meanwhile (sources.raw_bytes) is the copy, seekable like the file, a block fetched at a
time; bytes its index holds and the copy not yet are NotCopiedYet, never an end of file.
"""

from __future__ import annotations

import io
from contextlib import nullcontext
from pathlib import Path
from typing import BinaryIO

from django.utils import timezone

from tapeview import outage
from tapeview.sources import TapeNotFound
from tapeview.sources.raw_bytes import FileStat, reading_from, use

from .filecopy import BLOCK, digest
from .models import FileBlock, FileCopy, Indexer, this_host


def copied(host: str) -> bool:
    """Whether files of `host` are read from their copies here (another host's files are not here)."""
    return host != this_host()


def reading(host: str):
    """A context in which the readers open `host`'s files: its copies when it is another host."""
    return reading_from(Copies(host)) if copied(host) else nullcontext()


def read_from_host(host: str) -> None:
    """The rest of this request reads `host`'s files (its copies when it is another host): the
    lookups of a tape or a store by its key say so, and every read behind the page follows."""
    use(Copies(host) if copied(host) else None)


class FilesMiddleware:
    """Every request starts out reading this machine's files, whatever the thread read before."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        with reading_from(None):
            return self.get_response(request)


class NotCopied(TapeNotFound, FileNotFoundError):
    """Another host's file with no copy here: its watcher does not copy files, or has not yet.
    A missing file to readers of either kind: a tape's (TapeNotFound) and a memory file's."""

    def __init__(self, host: str, path: Path) -> None:
        super().__init__(str(path))
        self.detail = (
            f"this file is on host {host} and not copied to the database (yet): its host's "
            "`tapeview index --watch` copies it when TAPEVIEW_COPY_FILES is on"
        )


class NotCopiedYet(NotCopied):
    """Bytes of another host's tape that its index holds and its copy not yet (keep_tapes follows it):
    a 503 with Retry-After (tapeview.errors), not a 404: they are on their way."""

    retry_after = 2  # seconds: the watcher copies right after it indexes

    def __init__(self, copy: FileCopy, held: int, known: int) -> None:
        super().__init__(copy.host, Path(copy.path))
        lag = f"the copy is {known - held:,} bytes behind" if held else "its copy is of an earlier version"
        away = _away(copy.host)
        if away:
            self.retry_after = 30  # nothing copies it before that watcher is back
            self.detail = f"this part of the tape is not copied from host {copy.host} yet ({lag}): {away}"
        else:
            self.detail = (
                f"this part of the tape is not copied from host {copy.host} yet ({lag}): "
                "its `tapeview index --watch` copies it next; try again in a few seconds"
            )


def _away(host: str) -> str:
    """Why `host`'s watcher will not copy soon ("" while it beats), as the outbox names a host away."""
    watcher = Indexer.objects.filter(host=host).first()
    if watcher is None:  # copied by a `tapeview index` run, if not by a watcher
        return ""
    if watcher.beat_at is None:
        return f"host {host}'s `tapeview index --watch` was stopped: the copy waits for it to run again"
    if timezone.now() - watcher.beat_at > Indexer.GONE_AFTER:
        return (
            f"host {host}'s `tapeview index --watch` has not been seen for {outage.since(watcher.beat_at)}: "
            "the copy waits for it"
        )
    return ""


class Copies:
    """The files of one host, as copied into the database (sources.raw_bytes.Files)."""

    def __init__(self, host: str) -> None:
        self.host = host

    def open(self, path: Path) -> BinaryIO:
        return _Opened(_CopiedFile(self._copy(path)), BLOCK)

    def size(self, path: Path) -> int:
        return self._copy(path).size

    def _copy(self, path: Path) -> FileCopy:
        copy = FileCopy.objects.select_related("tape").filter(digest=digest(self.host, str(path))).first()
        if copy is None:
            raise NotCopied(self.host, path)
        return copy


def _held(copy: FileCopy) -> tuple[int, int]:
    """The bytes of a copy that its readers may read, and how many its tape's index knows of."""
    tape = copy.tape
    if tape is None or tape.indexed_at is None:
        return copy.size, copy.size  # a memory file, or a tape nothing is read of by offset yet
    if tape.append_only:  # the file's generation indexed: then the copy is its first bytes
        same = copy.inode == tape.inode and (copy.head == tape.head or not (copy.head and tape.head))
    else:  # a file the agent rewrites: only the very version indexed
        same = (copy.inode, copy.size, copy.mtime_ns) == (tape.inode, tape.size, tape.mtime_ns)
    return (copy.size if same else 0), max(tape.size, tape.indexed_offset)


class _Opened(io.BufferedReader):
    """A copy opened for reading, with the stat its host recorded (sources.raw_bytes.stat_of)."""

    def file_stat(self) -> FileStat:
        copy = self.raw.copy
        return FileStat(copy.size, copy.mtime_ns / 1e9, copy.inode or 0, 0)

    def require(self, end: int) -> None:  # before a span is streamed (sources.raw_bytes.read_raw)
        self.raw.require(end)


class _CopiedFile(io.RawIOBase):
    """A copy read like the file: seek anywhere, read what the blocks hold, one block kept. Bytes
    the index knows of and the copy does not hold are never read as an end of file: NotCopiedYet."""

    def __init__(self, copy: FileCopy) -> None:
        self.copy, self.copy_id, self.size, self.pos = copy, copy.pk, copy.size, 0
        self.held, self.known = _held(copy)
        self.block: tuple[int, bytes] = (0, b"")

    def require(self, end: int) -> None:
        if min(end, self.known) > self.held:
            raise NotCopiedYet(self.copy, self.held, self.known)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer) -> int:
        if self.pos >= self.held:
            self.require(self.pos + 1)
            return 0
        start, data = self.block
        if not start <= self.pos < start + len(data):
            start, data = self.block = self._block_at(self.pos)
        if not data:
            return 0
        got = data[self.pos - start : self.pos - start + len(buffer)]
        buffer[: len(got)] = got
        self.pos += len(got)
        return len(got)

    def _block_at(self, pos: int) -> tuple[int, bytes]:
        row = (
            FileBlock.objects.filter(copy_id=self.copy_id, start__lte=pos, end__gt=pos)
            .values_list("start", "data")
            .first()
        )
        return (pos, b"") if row is None else (row[0], bytes(row[1]))
