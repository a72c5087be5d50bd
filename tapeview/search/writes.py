"""SQLite's write side: docs inserted in bulk, and the settings a search pass writes under
(PostgreSQL's: search.pg_writes and search.pg_rows).

The search pass (search.catchup) writes batches of tens of thousands of docs, one transaction each;
what they cost besides tokenising is measured in bench/search_engines.py.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import TypeVar

from django.db import IntegrityError, connection, transaction

from .docs import COLUMNS

T = TypeVar("T")
META = COLUMNS.split(", ")
# Pages (4 kB) the log of a search pass grows to before it is checkpointed: a bound on its file.
WAL_PAGES = 25_000
# Where a batch of entries' docs waits for its two statements, never in the database's own file:
# per connection, a temporary table (in memory: the connection's temp_store, settings.py); or, for a
# batch staged `apart`, a database in memory of its own (SQLite's memdb), attached while it is written.
BATCH = "temp.search_batch"
APART = "search_staged"
TABLE = (
    "CREATE TABLE IF NOT EXISTS {} (id integer PRIMARY KEY, body text, tags text, "
    "tape_id integer, pos integer, source text, kind text, name text, date text)"
)


class Staged:
    """A batch's rows as SQLite writes them: memory docs as they are, tape entries' docs as the columns
    of the staging table (the search pass makes them so: `entries`, see backends.SQLite.entry); `apart`,
    those are in a database in memory of their own already, filled by the thread that read them (the
    search pass's read-ahead, while FTS5 writes the batch before). An entry's doc has no store and no
    item: those columns are left to their defaults, not bound for each of a pass's rows (binding a None
    and an empty string for 200,000 rows took 0.4 s of 1.2 s)."""

    def __init__(self, rows: list[tuple], apart: bool = False, entries: bool = False) -> None:
        if entries:
            self.others, self.entries = [], rows
        else:
            self.others = [r for r in rows if r[3] != "entry"]
            self.entries = [
                (r[0], r[1], r[2], r[4], r[5], r[8], r[9], r[10], r[11]) for r in rows if r[3] == "entry"
            ]
        self.ids = (min(rows[0][0], rows[-1][0]), max(rows[0][0], rows[-1][0])) if rows else None
        self.uri, self.db = "", None
        if apart and self.entries and memdb():
            self.uri = f"file:/tapeview-search-{uuid.uuid4().hex}?vfs=memdb"
            # Lives while a connection has it open: this one until the writing connection attaches it.
            self.db = sqlite3.connect(self.uri, uri=True, check_same_thread=False, isolation_level=None)
            self.db.execute(TABLE.format("search_batch"))
            self.db.execute("BEGIN")
            self.db.executemany("INSERT INTO search_batch VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", self.entries)
            self.db.execute("COMMIT")
            self.entries = []

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


@functools.cache
def memdb() -> bool:
    """Whether this SQLite shares a database in memory between connections (3.36 on, unless left out
    of the build): else a batch waits in the writing connection's temporary table."""
    try:
        sqlite3.connect("file:/tapeview-search-probe?vfs=memdb", uri=True).close()
    except sqlite3.Error:
        return False
    return True


def sqlite_insert(staged: Staged, meanwhile: Callable[[], T] | None = None) -> Callable[[], T | None]:
    """A batch into the FTS5 table and `search_meta`; `meanwhile` starts in a thread of its own as FTS5
    tokenises it. Returns what gives its result (None without it): asked for after the commit, so the
    write lock is never held for the reading's sake; then a batch staged apart is detached (SQLite
    refuses that within the transaction that read it).

    A tape entry's docs go in from their staging table, one statement per table: SQLite lets other
    threads run for the whole of such a statement, where an insert a row at a time takes the
    interpreter back after each row (and waits for it while another thread runs)."""
    log = getattr(_pass, "log", None)
    ahead = Ahead(meanwhile if meanwhile is None or log is None else _checkpointed(meanwhile, log))
    with connection.cursor() as cursor:
        source = _stage(cursor, staged)
        try:
            try:
                with transaction.atomic():
                    _sqlite_move(cursor, "INSERT", staged.others, source, ahead)
            except IntegrityError:
                # Another writer put docs of these ids in meanwhile (a memory store indexed by the
                # request that wrote it and by the watcher at once): the newer rows take their place.
                _sqlite_move(cursor, "INSERT OR REPLACE", staged.others, source, ahead)
        except BaseException:
            ahead.join()  # nothing is left reading behind a failed write
            raise
        finally:
            if source == BATCH:
                cursor.execute(f"DELETE FROM {BATCH}")
    if not staged.uri:
        return ahead.result

    def result() -> T | None:
        with connection.cursor() as cursor:
            detach(cursor)
        return ahead.result()

    return result


def _stage(cursor, staged: Staged) -> str:
    """Where the batch's entries are read from ("" if it has none)."""
    if staged.uri:
        # (One whose write failed is detached at the end of its pass: see sqlite_pass.)
        cursor.execute(f"ATTACH %s AS {APART}", [staged.uri])
        staged.close()  # the attached database lives on
        return f"{APART}.search_batch"
    if staged.entries:
        cursor.execute(TABLE.format(BATCH))
        cursor.executemany(f"INSERT INTO {BATCH} VALUES ({', '.join(['%s'] * 9)})", staged.entries)
        return BATCH
    return ""


def detach(cursor) -> None:
    """The batch staged apart, if one is still attached (outside the transaction that read it)."""
    cursor.execute("PRAGMA database_list")
    if any(name == APART for _, name, _ in cursor.fetchall()):
        cursor.execute(f"DETACH {APART}")


def _sqlite_move(cursor, verb: str, others: list[tuple], source: str, ahead: Ahead) -> None:
    if others:
        cursor.executemany(
            f"{verb} INTO search_doc (rowid, body, tags) VALUES (%s, %s, %s)", [r[:3] for r in others]
        )
        cursor.executemany(
            f"{verb} INTO search_meta (id, {COLUMNS}) VALUES ({', '.join(['%s'] * 10)})",
            [(r[0], *r[3:]) for r in others],
        )
    if source:
        ahead.start()  # only now: beside a row-at-a-time insert it would wait for the interpreter
        cursor.execute(f"{verb} INTO search_doc (rowid, body, tags) SELECT id, body, tags FROM {source}")
        cursor.execute(
            f"{verb} INTO search_meta (id, doc, tape_id, pos, source, kind, name, date) "
            f"SELECT id, 'entry', tape_id, pos, source, kind, name, date FROM {source}"
        )


class Ahead:
    """Work run once: in a thread of its own once started, or in the caller's thread when its result
    is asked for before; then its result is given (or what it raised raised) each time it is asked."""

    def __init__(self, work: Callable[[], T] | None) -> None:
        self.work = work
        self.thread: threading.Thread | None = None
        self.done: list = []

    def _run(self) -> None:
        try:
            self.done.append((True, self.work()))
        except BaseException as exc:  # raised in the caller's thread, not lost in this one
            self.done.append((False, exc))

    def start(self) -> None:
        if self.work is not None and self.thread is None:
            self.thread = threading.Thread(target=self._run, name="search-read-ahead", daemon=True)
            self.thread.start()

    def join(self) -> None:
        if self.thread is not None:
            self.thread.join()

    def result(self) -> T | None:
        if self.work is None:
            return None
        if self.thread is None and not self.done:
            self._run()
        self.join()
        ok, value = self.done[0]
        if not ok:
            raise value
        return value


def _checkpointed(work: Callable[[], T], log: str) -> Callable[[], T]:
    """`work` (the read-ahead), while a thread of its own checkpoints the write-ahead log of the database
    file `log` as far as the batches before committed it, and is waited for with it: mostly a wait for
    the disk, where FTS5 and the read-ahead keep both cores busy. (Run after the read in its thread,
    the pass took 0.1 s longer; left running into the next batch, 0.2 s.)"""

    def both() -> T:
        copying = threading.Thread(target=_checkpoint, args=(log,), name="search-checkpoint", daemon=True)
        copying.start()
        try:
            return work()
        finally:
            copying.join()

    return both


def _checkpoint(log: str) -> None:
    try:
        with closing(sqlite3.connect(log, timeout=0, isolation_level=None)) as db:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error:  # left to the pass's own checkpoints, every WAL_PAGES and at its end
        pass


# The database file of this thread's search pass where its log is a write-ahead log (see sqlite_pass).
_pass = threading.local()


@contextmanager
def sqlite_pass() -> Iterator[None]:
    """The pass's connection checkpoints its write-ahead log every WAL_PAGES, not at every commit (a
    batch writes tens of MB: each commit copied them to the database again), and once at the end;
    beside each read-ahead, a thread of its own copies what the commits before wrote (`_checkpointed`),
    so those find little left to copy (at the end of the real tape's pass, 0.03 s of 0.28 s). The
    connection's own setting comes back, also on failure."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        (before,) = cursor.fetchone()
        cursor.execute(f"PRAGMA wal_autocheckpoint = {WAL_PAGES}")
        cursor.execute("PRAGMA journal_mode")
        wal = cursor.fetchone()[0] == "wal"
    outer, _pass.log = getattr(_pass, "log", None), str(connection.settings_dict["NAME"]) if wal else None
    try:
        yield
    finally:
        _pass.log = outer
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA wal_autocheckpoint = {int(before)}")
            # PASSIVE: never waits on a reader; what a reader still holds is copied at a later commit.
            # (SQLite refuses a checkpoint within a transaction: the caller's commit makes one.)
            if not connection.in_atomic_block:
                detach(cursor)  # a batch whose write failed
                cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
