"""Source files copied into the database, so a web tier on another machine reads them there (a fleet).

The watcher of a file's host keeps its copies in a pass behind the index (`keep_tapes`, `keep`): an
append-only tape gains its new bytes (its last block grown in place up to BLOCK, then new blocks), a
file the agent rewrites is copied whole again when it changed, and a tape made again (a new inode, a
shrink, another first line) is copied afresh. PostgreSQL compresses the blocks (lz4: migration 0012).
Readers on other hosts read the copies through tapes.copies.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tapeview.sources.raw_bytes import head

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
