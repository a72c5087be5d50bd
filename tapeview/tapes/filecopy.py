"""Source files copied into the database, so a web tier on another machine reads them there (a fleet).

The watcher of a file's host keeps its copy (`keep`): an append-only tape gains its new bytes
(its last block grown in place up to BLOCK, then new blocks), a file the agent rewrites is copied
whole again when it changed, and a tape made again (a new inode, a shrink, another first line) is
copied afresh. PostgreSQL compresses the blocks itself (lz4 where the server has it: migration
0012), so nothing is compressed in Python on the indexer's path.

Readers of another host's tape or store read the copy (`reading`): every file a reader opens
meanwhile (sources.raw_bytes) is the copy, seekable like the file, a block fetched at a time.
"""

from __future__ import annotations

import hashlib
import io
import os
from contextlib import nullcontext
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from tapeview.sources import TapeNotFound
from tapeview.sources.raw_bytes import FileStat, head, reading_from, use

from .models import FileBlock, FileCopy, Tape, this_host

BLOCK = 256 * 1024  # bytes of a block: one is read and unpacked to show an entry
STEP = 64 * BLOCK  # bytes read and written at a time


def enabled() -> bool:
    """Whether this process keeps copies of its host's files (TAPEVIEW_COPY_FILES)."""
    return settings.TAPEVIEW_COPY_FILES


def digest(host: str, path: str) -> str:
    return hashlib.blake2b(f"{host}\0{path}".encode(), digest_size=16).hexdigest()


# --- the watcher's side: keep the copy ---------------------------------------------------------


def keep(path: str, *, append_only: bool, tape: Tape | None = None) -> bool:
    """Bring this host's copy of a file up to date; True if anything was copied. A file gone
    takes its copy with it. One keeper of a copy at a time: its row is locked meanwhile."""
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
    with transaction.atomic():
        copy = FileCopy.objects.select_for_update().get(digest=key)
        try:
            st = os.stat(path)
        except OSError:
            copy.delete()
            return False
        if (copy.inode, copy.size, copy.mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns):
            return False  # another keeper did it meanwhile
        first = head(path)
        grows = append_only and copy.inode == st.st_ino and st.st_size >= copy.size and copy.head == first
        if not grows:
            FileBlock.objects.filter(copy=copy).delete()
            copy.size = 0
        try:
            with open(path, "rb") as f:
                f.seek(copy.size)
                while copy.size < st.st_size and (data := f.read(min(STEP, st.st_size - copy.size))):
                    _append(copy, data)  # a step at a time: memory stays bounded whatever the file
        except OSError:
            transaction.set_rollback(True)
            return False
        if head(path) != first:  # made again while we read: the next pass copies the new one
            transaction.set_rollback(True)
            return False
        copy.inode, copy.mtime_ns, copy.head = st.st_ino, st.st_mtime_ns, first
        copy.copied_at = timezone.now()
        copy.save()
    return True


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
    pieces = [(start + n, data[n : n + BLOCK]) for n in range(0, len(data), BLOCK)]
    if connection.vendor == "postgresql":
        _copy_in(copy, pieces)
    else:
        blocks = [FileBlock(copy=copy, start=s, end=s + len(d), data=d) for s, d in pieces]
        FileBlock.objects.bulk_create(blocks, batch_size=1)
    copy.size = start + len(data)


def _copy_in(copy: FileCopy, pieces: list[tuple[int, bytes]]) -> None:
    """PostgreSQL's COPY in binary: the bytes go as they are, where an INSERT quotes them as text
    in Python first (half of a watcher's time on a big tape went there)."""
    table = connection.ops.quote_name(FileBlock._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in ("copy_id", "start", "end", "data"))
    statement = f"COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)"
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as rows:
        rows.set_types(["bigint", "bigint", "bigint", "bytea"])
        for s, d in pieces:
            rows.write_row((copy.pk, s, s + len(d), d))


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


class Copies:
    """The files of one host, as copied into the database (sources.raw_bytes.Files)."""

    def __init__(self, host: str) -> None:
        self.host = host

    def open(self, path: Path) -> BinaryIO:
        return _Opened(_CopiedFile(self._copy(path)), BLOCK)

    def size(self, path: Path) -> int:
        return self._copy(path).size

    def _copy(self, path: Path) -> FileCopy:
        copy = FileCopy.objects.filter(digest=digest(self.host, str(path))).first()
        if copy is None:
            raise NotCopied(self.host, path)
        return copy


class _Opened(io.BufferedReader):
    """A copy opened for reading, with the stat its host recorded (sources.raw_bytes.stat_of)."""

    def file_stat(self) -> FileStat:
        copy = self.raw.copy
        return FileStat(copy.size, copy.mtime_ns / 1e9, copy.inode or 0, 0)


class _CopiedFile(io.RawIOBase):
    """A copy read like the file: seek anywhere, read what the blocks hold, one block kept."""

    def __init__(self, copy: FileCopy) -> None:
        self.copy, self.copy_id, self.size, self.pos = copy, copy.pk, copy.size, 0
        self.block: tuple[int, bytes] = (0, b"")

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
        if self.pos >= self.size:
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
