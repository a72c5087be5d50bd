"""The search pass's writes: a batch read while the one before is written (PostgreSQL) never costs that
one its commit, and the settings the pass writes under are put back after it, also when it fails."""

from __future__ import annotations

import pytest
from django.db import connection

from tapeview.search import catchup, engine
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
