"""The search pass: tape entries made searchable behind the offset index, read again from the files.

Indexing a tape (tapes.index) is parsing and a row per entry; tokenising the text costs several times
that, so it is a second pass, run by the background indexer when it has nothing else to do, by
`tapeview index` when it is done, by the search page where no indexer runs, and at once for a small
append. Each tape's progress (SearchedTape) is committed with each batch of docs: a killed pass goes on
where it stopped, and a doc's id (tape << 32 | pos) is its place, so nothing is ever there twice. Lines
are read by the lane (search.lane: most Bub lines without an Entry). The next batch is read while the
database tokenises the one before: on PostgreSQL in the server (search.pg_rows), on SQLite in a
statement that lets this process's other threads run (search.writes).
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.db import IntegrityError, transaction

from tapeview.sources import TapeNotFound
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape, db_text

from . import backends
from .docs import LAST_POS, SHIFT, fetch, tags, tape_span
from .lane import Doc, tape_docs
from .models import SearchedTape

log = logging.getLogger("tapeview.search")
Engine = backends.SQLite | backends.PostgreSQL
T = TypeVar("T")

# Entries per transaction: the write lock is held while they are tokenised (a few hundred ms), and
# FTS5 writes a segment per commit, so fewer, larger batches cost less to write and to merge.
BATCH = 20_000
BATCH_BYTES = 16_000_000  # ...or this many bytes of the file, whichever comes first
PAGE_BUDGET = 2.0  # seconds a search request may spend catching up where no background indexer runs
ANALYZE_AFTER = 100_000  # docs made after which PostgreSQL's statistics are renewed

# Bub writes the whole system prompt again for every LLM call (formats/bub.md §2.1): most of a
# tape's bytes. A prompt identical to the tape's previous one is indexed once, where it first
# appears; later copies keep only their kind. Per process, so a restart indexes one copy again.
_last_system: dict[int, int] = {}
# Docs this process made since it last renewed the statistics: the watcher's passes are slices of a
# second, and an agent's small turns are made searchable as they are indexed, none ANALYZE_AFTER alone.
_unanalyzed = 0


class Overtaken(Exception):
    """The tape was reset, or another pass went further, since this batch was read: it is dropped."""


def catch_up(budget: float | None = None) -> int:
    """Make every indexed entry searchable; stop after `budget` seconds (at the end of a batch, and
    after one batch at least). Returns how many entries were made searchable."""
    backend = backends.current()
    if backend is None:
        return 0
    deadline = None if budget is None else time.monotonic() + budget
    made = 0
    tapes = behind()
    first = next(tapes, None)
    if first is None:  # the indexer asks whenever it is idle: nothing to set up, nor to put back
        return 0
    with backend.passing():
        for tape in itertools.chain([first], tapes):
            made += catch_up_tape(tape, deadline)
            if deadline is not None and time.monotonic() >= deadline:
                break
    return made


def catch_up_unwatched(budget: float = PAGE_BUDGET) -> int:
    """Where no background indexer beats (tests, a lone `tapeview runserver`), the page that asks
    catches up itself, for at most `budget` seconds; the indexer does it where it runs, and a web
    tier that leaves the index to others (`serve --no-index`) never does. Returns the docs made or
    moved."""
    if not settings.TAPEVIEW_WEB_INDEXES or discovery.watcher() is not None:
        return 0
    deadline = time.monotonic() + budget
    made = catch_up(budget) if lag() else 0
    backend = backends.current()
    # Then PostgreSQL's fresh docs into the GIN index (search.fresh), in what is left of the budget.
    return made + (backend.refine(deadline) if backend is not None else 0)


def _behind_sql(columns: str, of_host: bool = False) -> str:
    """Over the tapes whose indexed entries are not all searchable (`n`: how many are not); `of_host`:
    one host's (a parameter), filtered before the join, so a watcher's look costs its own tapes."""
    tapes, searched = Tape._meta.db_table, SearchedTape._meta.db_table
    if of_host:
        # Each tape's progress looked up by its key, not joined: a join lets PostgreSQL choose to
        # hash every host's progress rows, whatever the host filter leaves of the tapes.
        progress = f"(SELECT s.next_pos FROM {searched} s WHERE s.tape_id = t.id)"
        inner = f"FROM {tapes} t WHERE t.host = %s"
    else:
        progress, inner = "s.next_pos", f"FROM {tapes} t LEFT JOIN {searched} s ON s.tape_id = t.id"
    return (
        f"SELECT {columns} FROM (SELECT t.id, t.host, t.source, t.next_pos - COALESCE({progress}, 1) AS n "
        f"{inner}) AS lag WHERE n > 0"
    )


def lag() -> int:
    """Entries indexed but not yet searchable, over every tape."""
    return int(fetch(_behind_sql("COALESCE(SUM(n), 0)"), [])[0][0])


def lag_by_source() -> dict[str, int]:
    """Entries indexed but not yet searchable, per source."""
    return {source: int(n) for source, n in fetch(_behind_sql("source, SUM(n)") + " GROUP BY source", [])}


def lag_asked(sender: object, **kwargs: object) -> dict[str, int]:
    return lag_by_source()


def behind() -> Iterator[Tape]:
    """This host's tapes whose indexed entries are not all searchable, the smallest lag first: small
    tapes (fresh sessions) become searchable before the pass settles into a big one. Another host's
    tapes are its own watcher's to make searchable: their files are there."""
    sql = _behind_sql("id", of_host=True) + " ORDER BY n, id"
    ids = [tape_id for (tape_id,) in fetch(sql, [discovery.this_host()])]
    found = Tape.objects.in_bulk(ids)
    for tape_id in ids:
        if tape_id in found:
            yield found[tape_id]


def catch_up_tape(tape: Tape, deadline: float | None = None) -> int:
    """Make a tape's indexed entries searchable, in batches, each committed with the progress it makes;
    stop after a batch once `deadline` (time.monotonic) has passed. Returns the entries made searchable."""
    backend = backends.current()
    try:
        mark, _ = SearchedTape.objects.get_or_create(tape_id=tape.pk)
    except IntegrityError:  # the tape was deleted meanwhile
        return 0
    made = 0
    # Batches committed on their own (not within a caller's transaction) are staged apart as they are read.
    batches = _batches(backend, tape, mark, apart=not transaction.get_connection().in_atomic_block)

    def read() -> tuple | Exception | None:
        """The next batch, None once there is none, or what reading it raised: on PostgreSQL it is
        read within the transaction of the batch before, which is committed all the same."""
        try:
            return next(batches, None)
        except Exception as exc:  # raised once the batch before is committed
            return exc

    def ahead() -> tuple | Exception | None:
        return None if deadline is not None and time.monotonic() >= deadline else read()

    try:
        batch = read()
        while isinstance(batch, tuple):
            prepared, size, offset, next_pos = batch
            batch = _commit(backend, tape, mark, prepared, offset, next_pos, ahead)
            made += size
        if isinstance(batch, Exception):
            raise batch
    except Overtaken:
        pass
    except (TapeNotFound, OSError) as exc:  # gone or replaced since it was indexed: the indexer will see
        log.info("search pass: %s: %s", tape.path, exc)
    global _unanalyzed
    _unanalyzed += made
    if _unanalyzed >= ANALYZE_AFTER and backend is not None:
        _unanalyzed = 0
        backend.analyze()
    return made


def _batches(backend: Engine, tape: Tape, mark: SearchedTape, apart: bool) -> Iterator[tuple]:
    """The rows of the entries not yet searchable as the engine writes them (`prepare`), a batch at a
    time, each with its size and where it ends (offset, next_pos)."""
    docs, first = _unsearched(tape, mark), mark.next_pos
    while True:
        batch = _Batch(docs, first, tape.next_pos)
        # Rows are made as the lines are read: a batch never holds their parsed JSON (thousands of
        # objects each for the garbage collector to walk), only their rows.
        rows = entry_rows(backend, tape, batch)
        if not batch.size:
            return
        yield backend.prepare(rows, apart), batch.size, batch.offset, batch.next_pos
        if batch.last_read:
            return


def _unsearched(tape: Tape, mark: SearchedTape) -> Iterator[Doc]:
    """The docs of a tape's lines from where those not searchable yet may be, read from the file: from
    the mark on for an append-only tape, else the file again from its start."""
    if not tape.append_only:
        return tape_docs(tape.kind, Path(tape.path))
    if tape.inode is not None and os.stat(tape.path).st_ino != tape.inode:
        return iter(())  # replaced: the indexer resets the tape, and its search progress with it
    return tape_docs(tape.kind, Path(tape.path), mark.offset, mark.next_pos)


class _Batch:
    """The docs of a tape's next entries not searchable yet (their pos from `first`, before `last`), up
    to BATCH of them or BATCH_BYTES of the file, as they are read; then where they end (`offset`,
    `next_pos`), and whether they are the last to read (`last_read`)."""

    def __init__(self, docs: Iterator[Doc], first: int, last: int) -> None:
        self.docs, self.first, self.last = docs, first, last
        self.size = self.offset = self.next_pos = 0
        self.last_read = False

    def __iter__(self) -> Iterator[Doc]:
        # Counted in local names, and told once it ends: this runs once per entry of every tape.
        size = read = 0
        first, last, end = self.first, self.last, None
        try:
            for doc in self.docs:
                if doc[0] >= last:  # not in the offset index yet: a page could not show it
                    self.last_read = True
                    return
                if doc[0] < first:
                    continue
                size += 1
                end = doc
                yield doc
                read += doc[2]
                if size >= BATCH or read >= BATCH_BYTES:
                    return
            self.last_read = True
        finally:
            if end is not None:
                self.size, self.offset, self.next_pos = size, end[1] + end[2], end[0] + 1


def _commit(
    backend: Engine,
    tape: Tape,
    mark: SearchedTape,
    prepared: Any,
    offset: int,
    next_pos: int,
    ahead: Callable[[], T],
) -> T:
    """A batch's docs and the progress they make, in one transaction, or neither; returns what `ahead`
    (the next batch's reading) returns: it runs while the database tokenises this batch, and is
    waited for after the commit."""
    with transaction.atomic():
        moved = SearchedTape.objects.filter(tape_id=tape.pk, offset=mark.offset, next_pos=mark.next_pos)
        if not moved.update(offset=offset, next_pos=next_pos):
            raise Overtaken
        if not Tape.objects.filter(pk=tape.pk, inode=tape.inode, next_pos__gte=next_pos).exists():
            raise Overtaken
        following = backend.write(prepared, ahead)
    mark.offset, mark.next_pos = offset, next_pos
    return following()


def entry_rows(backend: Engine, tape: Tape, docs: Iterable[Doc]) -> list[tuple]:
    """The rows of a tape's docs as the engine writes them (its `entry`): this runs once per entry of
    every tape, so what the rows of one kind and name share (their `label`) is made once a batch."""
    tape_id, source, entry = tape.pk, tape.source, backend.entry
    first_id = tape_id << SHIFT
    last_system = _last_system.get(tape_id)
    labels: dict[tuple[str, str], tuple] = {}
    rows = []
    for pos, _, _, kind, name, text, day in docs:
        if pos > LAST_POS:
            continue
        if kind == "system":
            # Bub writes the whole system prompt again for every LLM call: a copy of the one before
            # is indexed by its kind alone.
            digest = hash(text)
            if digest == last_system:
                text = kind
            last_system = _last_system[tape_id] = digest
        label = labels.get((kind, name))
        if label is None:
            label = labels[kind, name] = _label(backend, tape_id, source, kind, name)
        rows.append(entry(first_id | pos, text, label, pos, day))
    return rows


def _label(backend: Engine, tape_id: int, source: str, kind: str, name: str) -> tuple:
    if "\x00" in kind or "\x00" in name:  # as the database keeps them (tapes.models.db_text)
        kind, name = db_text(kind), db_text(name)
    return backend.label(tags(source, kind, name), tape_id, source, kind, name[:200])


def forget_tape(tape_id: int) -> None:
    """A tape's docs and its progress, gone together: the pass reads the tape again from its start."""
    _last_system.pop(tape_id, None)
    backend = backends.current()
    if backend is not None:
        backend.delete(*tape_span(tape_id))
    SearchedTape.objects.filter(tape_id=tape_id).delete()
