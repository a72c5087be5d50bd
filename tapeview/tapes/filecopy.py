"""Source files copied into the database, so a web tier on another machine reads them there (a fleet).

The watcher of a file's host keeps its copies in a pass behind the index (`keep_tapes`, `keep`): an
append-only tape gains its new bytes (its last block grown in place up to BLOCK, then new blocks), a
file the agent rewrites is copied whole again when it changed, and a tape made again (a new inode, a
shrink, another first line) is copied afresh. PostgreSQL compresses the blocks (lz4: migration 0012).

Readers of another host's tape or store read the copy (`reading`): every file a reader opens
meanwhile (sources.raw_bytes) is the copy, seekable like the file, a block fetched at a time; bytes
its index holds and the copy not yet are NotCopiedYet, never an end of file.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterable
from contextlib import nullcontext
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tapeview.sources import TapeNotFound
from tapeview.sources.raw_bytes import FileStat, head, reading_from, use

from . import bulk
from .models import FileBlock, FileCopy, Tape, this_host

BLOCK = 256 * 1024  # bytes of a block: one is read and unpacked to show an entry
STEP = 64 * BLOCK  # bytes read and written at a time
BLOCK_TYPES = ("bigint", "bigint", "bigint", "bytea")  # a FileBlock's copy, start, end, data


def enabled() -> bool:
    """Whether this process keeps copies of its host's files (TAPEVIEW_COPY_FILES)."""
    return settings.TAPEVIEW_COPY_FILES


def digest(host: str, path: str) -> str:
    return hashlib.blake2b(f"{host}\0{path}".encode(), digest_size=16).hexdigest()


# --- the watcher's side: keep the copy ---------------------------------------------------------


def keep(path: str, *, append_only: bool, tape: Tape | None = None) -> bool:
    """Bring this host's copy of a file up to date; True if anything was copied. A file gone
    takes its copy with it. An append-only file is copied a STEP per transaction, its row locked
    meanwhile (one keeper at a time): a keeper stopped halfway (an error, killed) leaves a copy
    that is the file's first bytes, and the next goes on from there. A rewritten file, whole."""
    key = digest(this_host(), path)
    try:
        st = os.stat(path)
    except OSError:
        FileCopy.objects.filter(digest=key).delete()
        return False
    seen = FileCopy.objects.filter(digest=key).values_list("inode", "size", "mtime_ns").first()
    if seen == (st.st_ino, st.st_size, st.st_mtime_ns):
        return False  # one query for a file that did not change: a full pass looks at every file
    if seen is None:
        FileCopy.objects.get_or_create(digest=key, defaults={"host": this_host(), "path": path, "tape": tape})
    first = more = _step(key, path, append_only)
    while more:
        more = _step(key, path, append_only)
    return first is not None


def keep_tapes(tapes: Iterable[Tape]) -> None:
    """The copy pass behind the index (the watcher after its refreshes, `tapeview index` after its
    sync): this host's tapes' copies brought up to their files; a stat and a query for one that is
    not behind. Off the index's path: a web tier meanwhile says what is not copied yet (NotCopiedYet)."""
    if enabled():
        for tape in tapes:
            if tape.host == this_host():
                keep(tape.path, append_only=tape.append_only, tape=tape)


def _step(key: str, path: str, append_only: bool) -> bool | None:
    """One transaction of `keep`: None when it copied nothing (up to date, or the file changed
    under it), else whether bytes are left to copy."""
    with transaction.atomic():
        copy = FileCopy.objects.select_for_update().filter(digest=key).first()
        if copy is None:
            return None  # forgotten meanwhile
        try:
            st = os.stat(path)
        except OSError:
            copy.delete()
            return None
        if (copy.inode, copy.size, copy.mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns):
            return None  # another keeper did it meanwhile
        first = head(path)
        grows = append_only and copy.inode == st.st_ino and st.st_size >= copy.size and copy.head == first
        if not grows:
            FileBlock.objects.filter(copy=copy).delete()
            copy.size = 0
        start, end = copy.size, min(st.st_size, copy.size + STEP) if append_only else st.st_size
        try:
            with open(path, "rb") as f:
                f.seek(copy.size)
                while copy.size < end and (data := f.read(min(STEP, end - copy.size))):
                    _append(copy, data)  # a step at a time: memory stays bounded whatever the file
        except OSError:
            transaction.set_rollback(True)
            return None
        if head(path) != first:  # made again while we read: the next pass copies the new one
            transaction.set_rollback(True)
            return None
        copy.inode, copy.mtime_ns, copy.head = st.st_ino, st.st_mtime_ns, first
        copy.copied_at = timezone.now()
        copy.save()
    return start < copy.size < st.st_size


def forget(paths: list[str]) -> None:
    """Drop this host's copies of files it no longer reads."""
    FileCopy.objects.filter(digest__in=[digest(this_host(), p) for p in paths]).delete()


def _append(copy: FileCopy, data: bytes) -> None:
    """`data` after the copy's bytes: the last block grown up to BLOCK first, then new blocks."""
    if not data:
        return
    # The last block's bytes are read only to grow it: a copy made a step at a time reads none.
    last = FileBlock.objects.filter(copy=copy).order_by("-start").values_list("pk", "start", "end").first()
    if last is not None and last[2] - last[1] < BLOCK:
        pk, last_start, last_end = last
        room = BLOCK - (last_end - last_start)
        grown = bytes(FileBlock.objects.values_list("data", flat=True).get(pk=pk)) + data[:room]
        FileBlock.objects.filter(pk=pk).update(data=grown, end=last_start + len(grown))
        data, start = data[room:], last_start + len(grown)
    else:
        start = copy.size
    pieces = [
        (copy.pk, start + n, start + n + len(d), d)
        for n in range(0, len(data), BLOCK)
        if (d := data[n : n + BLOCK])
    ]
    # PostgreSQL's COPY in binary: the bytes go as they are, where an INSERT quotes them as text in
    # Python first (half of a watcher's time on a big tape went there).
    bulk.insert_rows(FileBlock, ("copy", "start", "end", "data"), pieces, BLOCK_TYPES)
    copy.size = start + len(data)


# --- the reader's side: read the copy ----------------------------------------------------------


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
        self.detail = f"this part of the tape is not copied from host {copy.host} yet ({lag}): its " + (
            "`tapeview index --watch` copies it next; try again in a few seconds"
        )


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
