"""The search pass's writes: a batch read while the one before is written never costs that one its
commit, and the settings the pass writes under are put back after it, also when it fails."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager

import pytest
from django.db import connection

from tapeview.search import backends, catchup, engine, writes
from tests.search.conftest import N, hits_of

pytestmark = pytest.mark.django_db


def unreadable_from(pos: int, monkeypatch) -> None:
    """The tape's file fails to read at entry `pos` (a disk error, a file gone mid-way)."""
    docs_of = catchup.tape_docs

    def failing(*args, **kwargs):
        for doc in docs_of(*args, **kwargs):
            if doc[0] == pos:
                raise OSError("unreadable")
            yield doc

    monkeypatch.setattr(catchup, "tape_docs", failing)


def test_a_batch_before_a_line_that_cannot_be_read_is_searchable(big, monkeypatch):
    with monkeypatch.context() as patched:
        unreadable_from(1500, patched)
        assert catchup.catch_up() == catchup.BATCH
    assert catchup.lag() == N - catchup.BATCH
    assert hits_of("w1000", big) == [1000]
    assert hits_of("w1001", big) == []
    assert catchup.catch_up() == N - catchup.BATCH
    assert catchup.lag() == 0
    assert engine.count("common", tape_key=big.key).total == N


def setting() -> str:
    """What the pass changes on its connection for its own writes (see search.writes)."""
    sql = "PRAGMA wal_autocheckpoint" if connection.vendor == "sqlite" else "SHOW synchronous_commit"
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return str(cursor.fetchone()[0])


def set_own_setting() -> str:
    """The connection given a value of its own, which the pass must leave as it found it."""
    own = "777" if connection.vendor == "sqlite" else "local"
    sql = (
        f"PRAGMA wal_autocheckpoint = {own}"
        if connection.vendor == "sqlite"
        else f"SET synchronous_commit = {own}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
    assert setting() == own
    return own


def test_the_pass_puts_its_connection_settings_back(big):
    before = set_own_setting()
    assert catchup.catch_up() == N
    assert setting() == before
    assert hits_of("w2600", big) == [2600]


def test_a_failing_pass_puts_its_connection_settings_back(big, monkeypatch):
    before = set_own_setting()

    def dies(*args):
        raise RuntimeError("killed")

    monkeypatch.setattr(catchup, "entry_rows", dies)
    with pytest.raises(RuntimeError):
        catchup.catch_up()
    assert setting() == before


def entry_rows_for(ids: list[int], word: str, kind: str = "message") -> list[tuple]:
    """Docs of tape entries of `kind` as the SQLite engine writes them, each saying `word`."""
    sqlite = backends.SQLite()
    return [sqlite.row(i, f"{word} {i}", "s_x", "entry", 1, i, None, "", "x", kind, "", "") for i in ids]


sqlite_only = pytest.mark.skipif("connection.vendor != 'sqlite'", reason="SQLite's own write path")


@sqlite_only
def test_sqlite_reads_the_next_batch_while_fts5_tokenises_this_one(big, monkeypatch):
    """The read-ahead runs while FTS5's insert is under way, not after it."""
    reading = slowed(catchup, "entry_rows", monkeypatch)
    with seen_while_writing(reading) as seen:
        assert catchup.catch_up() == N
    assert seen, "no batch was read while FTS5 was writing one"
    assert engine.count("common", tape_key=big.key).total == N
    assert hits_of("w2600", big) == [2600]


def slowed(owner: object, name: str, monkeypatch) -> threading.Event:
    """`owner.name` made as slow as a big batch's work at this tape's size; set while it runs."""
    running, work = threading.Event(), getattr(owner, name)

    def slow(*args, **kwargs):
        running.set()
        try:
            done = work(*args, **kwargs)
            time.sleep(0.2)
            return done
        finally:
            running.clear()

    monkeypatch.setattr(owner, name, slow)
    return running


@contextmanager
def seen_while_writing(running: threading.Event) -> Iterator[list[int]]:
    """Each time SQLite's progress handler (called between the steps of a running statement) finds
    `running` set."""
    seen: list[int] = []

    def progress() -> int:
        if running.is_set():
            seen.append(1)
        return 0

    connection.ensure_connection()
    connection.connection.set_progress_handler(progress, 1000)
    try:
        yield seen
    finally:
        connection.connection.set_progress_handler(None, 1000)


@sqlite_only
def test_docs_another_writer_put_in_meanwhile_are_replaced_and_the_read_ahead_runs_once(db):
    backends.SQLite().insert(entry_rows_for([5, 6, 7], "older"))
    calls = []
    # As a racing writer: no look for docs of these ids first, so the insert meets them.
    following = writes.sqlite_insert(
        writes.Staged(entry_rows_for([6, 7, 8], "newer", "event")), lambda: calls.append(1) or "next"
    )
    assert following() == "next"
    assert calls == [1]
    bodies = backends.SQLite().bodies([5, 6, 7, 8])
    assert [bodies[i].split()[0] for i in (5, 6, 7, 8)] == ["older", "newer", "newer", "newer"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, kind FROM search_meta WHERE id BETWEEN 5 AND 8 ORDER BY id")
        assert cursor.fetchall() == [(5, "message"), (6, "event"), (7, "event"), (8, "event")]


@sqlite_only
def test_a_read_ahead_that_fails_raises_when_its_result_is_asked_and_leaves_nothing_staged(db):
    def fails():
        raise RuntimeError("the disk")

    following = writes.sqlite_insert(writes.Staged(entry_rows_for([1, 2], "kept")), fails)
    with pytest.raises(RuntimeError, match="the disk"):
        following()
    assert sorted(backends.SQLite().bodies([1, 2])) == [1, 2]  # the batch's own docs are in
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {writes.BATCH}")
        assert cursor.fetchone() == (0,)


def attached() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA database_list")
        return [name for _, name, _ in cursor.fetchall()]


def staged_apart(monkeypatch) -> list[str]:
    """The databases in memory that the pass's batches are staged in, as they are made."""
    made, staged = [], writes.Staged.__init__

    def recorded(self, *args, **kwargs):
        staged(self, *args, **kwargs)
        if self.uri:
            made.append(self.uri)

    monkeypatch.setattr(writes.Staged, "__init__", recorded)
    return made


def gone(uri: str) -> bool:
    """No connection holds this database in memory any more: opened again, it is new and empty."""
    import sqlite3

    with closing(sqlite3.connect(uri, uri=True)) as again:
        return again.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_batches_committed_on_their_own_are_staged_apart_as_they_are_read_and_let_go(big, monkeypatch):
    """Outside a caller's transaction the read-ahead puts the next batch into a database in memory of
    its own while FTS5 writes this one; each is detached and freed once its batch is committed."""
    made = staged_apart(monkeypatch)
    staging = slowed(writes.Staged, "__init__", monkeypatch)
    with seen_while_writing(staging) as seen:
        assert catchup.catch_up() == N
    assert seen, "no batch was staged while FTS5 was writing one"
    assert len(made) == 3  # 1000, 1000 and 600 entries (BATCH is 1000 here)
    assert "search_staged" not in attached()
    assert all(gone(uri) for uri in made)
    assert engine.count("common", tape_key=big.key).total == N
    assert hits_of("w2600", big) == [2600]


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_batch_staged_apart_whose_write_fails_is_let_go_and_read_again(big, monkeypatch):
    made = staged_apart(monkeypatch)
    move, moves = writes._sqlite_move, []

    def fails_second(*args):
        moves.append(1)
        if len(moves) == 2:
            raise RuntimeError("killed mid-write")
        return move(*args)

    with monkeypatch.context() as patched:
        patched.setattr(writes, "_sqlite_move", fails_second)
        with pytest.raises(RuntimeError):
            catchup.catch_up()
    assert catchup.lag() == N - 1000  # the first batch is in, the second is not
    assert "search_staged" not in attached()
    assert all(gone(uri) for uri in made)
    assert catchup.catch_up() == N - 1000
    assert hits_of("w1500", big) == [1500]
    assert engine.count("common", tape_key=big.key).total == N


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_an_sqlite_without_shared_memory_databases_stages_in_the_writing_connection(big, monkeypatch):
    made = staged_apart(monkeypatch)
    monkeypatch.setattr(writes, "memdb", lambda: False)
    assert catchup.catch_up() == N
    assert made == []
    assert engine.count("common", tape_key=big.key).total == N
    assert hits_of("w2600", big) == [2600]


@sqlite_only
def test_fts5_keeps_the_write_settings_the_pass_was_measured_with(db):
    """The search table's own config (migrations 0003 and 0004): a transaction's terms kept in memory
    up to 16 MB before FTS5 writes them as a segment, and a level's segments merged once 16 are there."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT k, v FROM search_doc_config WHERE k IN ('hashsize', 'automerge')")
        assert dict(cursor.fetchall()) == {"automerge": 16, "hashsize": 16 * 1024 * 1024}


@sqlite_only
def test_the_read_ahead_checkpoints_what_the_batches_before_committed_and_the_pass_leaves_none(
    shared_db, big, monkeypatch
):
    """In a database file whose log is a write-ahead log, as `tapeview serve` opens it: the log is
    copied into the database as the pass goes, by a thread that does not outlive it."""
    copied, checkpoint = [], writes._checkpoint

    def recorded(log: str) -> None:
        checkpoint(log)
        with closing(sqlite3.connect(log)) as db:
            copied.append(db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())

    monkeypatch.setattr(writes, "_checkpoint", recorded)
    assert catchup.catch_up() == N
    # Beside each read-ahead: while each of the 3 batches was written (BATCH is 1000 here). What each
    # found in the log depends on how far the writer had come (a checkpoint beside the pass's own
    # answers busy, one after a reset finds none yet): that it ran each time is what is asserted.
    assert len(copied) == 3
    assert [thread.name for thread in threading.enumerate() if thread.name == "search-checkpoint"] == []
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
        busy, frames, done = cursor.fetchone()
    assert busy == 0 and frames == done  # and what the last one committed, at the end of the pass
    assert hits_of("w2600", big) == [2600]
