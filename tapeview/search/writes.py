"""The write side of both engines: docs inserted in bulk, and the settings a search pass writes under.

The search pass (search.catchup) writes batches of tens of thousands of docs, one transaction each;
what they cost besides tokenising is measured in bench/search_engines.py.
"""

from __future__ import annotations

import functools
import selectors
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from django.db import IntegrityError, connection, transaction

from .docs import COLUMNS
from .text import pg_body, pg_words

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
    of the staging table; `apart`, those are in a database in memory of their own already, filled by
    the thread that read them (the search pass's read-ahead, while FTS5 writes the batch before). An
    entry's doc has no store and no item: those columns are left to their defaults, not bound for
    each of a pass's rows (binding a None and an empty string for 200,000 rows took 0.4 s of 1.2 s)."""

    def __init__(self, rows: list[tuple], apart: bool = False) -> None:
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
    ahead = Ahead(meanwhile)
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


@contextmanager
def sqlite_pass() -> Iterator[None]:
    """The pass's connection checkpoints its write-ahead log every WAL_PAGES, not at every commit (a
    batch writes tens of MB: each commit copied them to the database again), and once at the end.
    The connection's own setting comes back, also on failure."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        (before,) = cursor.fetchone()
        cursor.execute(f"PRAGMA wal_autocheckpoint = {WAL_PAGES}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA wal_autocheckpoint = {int(before)}")
            # PASSIVE: never waits on a reader; what a reader still holds is copied at a later commit.
            # (SQLite refuses a checkpoint within a transaction: the caller's commit makes one.)
            if not connection.in_atomic_block:
                detach(cursor)  # a batch whose write failed
                cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")


# A batch is one statement: each distinct text once, tokenised once by to_tsvector however many
# docs share it (agents repeat themselves: prompts, tool outputs, handoffs), each distinct set of
# the columns docs share (tape, source, kind, name, tags) once, and the rest as lists joined by
# commas (the driver dumps a Python list an element at a time; ids and ISO dates hold no comma).
# `texts` is MATERIALIZED: inlined into the join, as PostgreSQL does with a CTE read once, its
# to_tsvector ran once per doc, not once per text (a batch of the real tape: 1.17 s against 0.10 s).
PG_ROWS = (
    "labels AS (SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::text[], "
    "%s::text[], %s::text[], %s::text[]) WITH ORDINALITY "
    "AS l(tags, doc, tape_id, store_id, item, source, kind, name, label)), "
    "docs AS (SELECT * FROM unnest(string_to_array(%s, ',')::bigint[], "
    "string_to_array(%s, ',')::bigint[], string_to_array(%s, ',')::bigint[], "
    "string_to_array(%s, ',', '')::integer[], "
    "(string_to_array(%s, ','))[2:]) AS d(id, n, label, pos, date))"
)
PG_INSERT = (
    "WITH texts AS MATERIALIZED (SELECT n, body, to_tsvector('simple', words) AS tsv "
    f"FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS t(body, words, n)), {PG_ROWS}, "
    # The batch's ids made before as fresh docs (search.fresh) are made again here.
    "fresh AS (DELETE FROM search_fresh WHERE id BETWEEN %s AND %s) "
    f"INSERT INTO search_doc (id, body, {COLUMNS}, tsv) "
    f"SELECT id, body, {COLUMNS}, tsv || array_to_tsvector(string_to_array(tags, ' ')) "
    "FROM docs JOIN texts USING (n) JOIN labels USING (label) ON CONFLICT (id) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in ("body", *META, "tsv"))
)


@dataclass
class PgParts:
    """Rows as PostgreSQL.row makes them, as PG_ROWS takes them: their distinct texts, the columns of
    their distinct labels, and the docs' own columns (ids, text, label, position, date); besides,
    each doc's text as its number among `texts` (from 1)."""

    texts: list[str]
    labels: list[list]
    docs: list[str]
    text_of: list[int]


def pg_parts(rows: list[tuple]) -> PgParts:
    texts: dict[str, int] = {}
    labels: dict[tuple, int] = {}
    # A column at a time (zip(*rows) took 20 ms of a 20,000-row batch's 37).
    text_of = [texts.setdefault(row[1], len(texts) + 1) for row in rows]
    label_of = [labels.setdefault(row[2], len(labels) + 1) for row in rows]
    docs = [
        ",".join([str(row[0]) for row in rows]),
        ",".join(map(str, text_of)),
        ",".join(map(str, label_of)),
        ",".join(["" if row[3] is None else str(row[3]) for row in rows]),
        "," + ",".join([row[4] for row in rows]),
    ]
    return PgParts(list(texts), [list(c) for c in zip(*labels, strict=True)], docs, text_of)


def pg_params(rows: list[tuple]) -> list:
    """PG_INSERT's parameters for rows as PostgreSQL.row makes them."""
    parts = pg_parts(rows)
    texts, ids = parts.texts, [row[0] for row in rows]
    return [
        [pg_body(t) for t in texts],
        [pg_words(t) for t in texts],
        *parts.labels,
        *parts.docs,
        min(ids),
        max(ids),
    ]


def pg_insert(params: list, meanwhile: Callable[[], T] | None = None, sql: str = PG_INSERT) -> T | None:
    """Rows into search_doc (PG_INSERT's `params`), or another such `sql`'s; `meanwhile` runs while the
    server tokenises them (the statement is sent in pipeline mode and its result read after), and
    what it returns is returned."""
    import psycopg  # PostgreSQL's driver: installed where this engine runs

    connection.ensure_connection()
    conn = connection.connection
    # A cursor that binds its parameters (Django's quotes them into the SQL as text).
    with psycopg.Cursor(conn) as cursor:
        if meanwhile is None:
            cursor.execute(sql, params)
            return None
        with conn.pipeline():
            cursor.execute(sql, params)
            # Sent whole now (libpq sends a pipeline's statement only as far as the socket takes it
            # at once): the server tokenises while this process goes on.
            with selectors.DefaultSelector() as sending:  # no select(): a socket past fd 1024 is fine
                sending.register(conn.pgconn.socket, selectors.EVENT_WRITE)
                while conn.pgconn.flush():
                    sending.select()
            return meanwhile()
