"""PostgreSQL's search docs written (search_doc, GIN-indexed, or search_fresh for a big batch: see
search.fresh) and kept (fresh docs moved into the GIN index, statistics, slices); its queries are
search.backends.PostgreSQL's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TypeVar

from django.db import connection

from . import fresh, pg_rows, slices, windows

T = TypeVar("T")
ANALYZE_AFTER = 100_000  # docs moved after which the statistics are renewed (as search.catchup's)
_moved = 0  # docs this process moved since it last renewed them


class PostgreSQLWrites:
    """How docs go into PostgreSQL's tables, and the tables' upkeep."""

    def row(self, doc_id: int, text: str, tags: str, *fields: object) -> tuple:
        """The values to insert: `fields` in the order of COLUMNS."""
        doc, tape_id, pos, store_id, item, source, kind, name, date = fields
        return doc_id, text, (tags, doc, tape_id, store_id, item, source, kind, name), pos, date

    def insert(self, rows: list[tuple]) -> None:
        """A memory store's docs, into search_doc whatever their number: a store is written again
        whole at each change, by whichever process saw it, and never made fresh."""
        if rows:
            slices.made(row[0] for row in rows)
            pg_rows.pg_insert(pg_rows.pg_params(rows))

    def prepare(self, rows: list[tuple], apart: bool = False) -> tuple | None:
        """What `write` sends of these rows (one tape's, as the search pass reads them; `apart` is
        SQLite's). A big batch is made fresh (see search.fresh)."""
        if not rows:
            return None
        if fresh.made(rows):
            return fresh.write, fresh.params(rows)
        slices.made(row[0] for row in rows)
        return pg_rows.pg_insert, pg_rows.pg_params(rows)

    def write(
        self, prepared: tuple | None, meanwhile: Callable[[], T] | None = None
    ) -> Callable[[], T | None]:
        """Prepared rows in; `meanwhile` runs while the server tokenises them. Returns what gives its
        result, as SQLite.write does."""
        if prepared is None:
            following = meanwhile() if meanwhile else None
        else:
            send, params = prepared
            following = send(params, meanwhile)
        return lambda: following

    def passing(self) -> AbstractContextManager[None]:
        """What a search pass writes under (see pg_pass)."""
        return pg_pass()

    def delete(self, first: int, last: int) -> None:
        fresh.delete(first, last)  # first: a block being refined meanwhile is in search_doc after it
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM search_doc WHERE id BETWEEN %s AND %s", [first, last])

    def waiting(self) -> int:
        """Docs searchable but not yet in the GIN index (see search.fresh)."""
        return fresh.waiting()

    def refine(self, deadline: float | None) -> int:
        """Fresh docs into the GIN index (see search.fresh) until `deadline`, or all of them; the
        statistics renewed after ANALYZE_AFTER docs moved, and once none is left."""
        global _moved
        moved = fresh.refine(deadline)
        _moved += moved
        if _moved >= ANALYZE_AFTER or (_moved and not fresh.pending()):
            _moved = 0
            self.analyze()
        return moved

    def analyze(self) -> None:
        """Renewed statistics, so the planner knows a common word from a rare one (see
        backends.PostgreSQL._matching), and the windows of `find` hold what they should."""
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE search_doc")
        windows.forget()

    def tidy(self, whole: bool) -> None:
        """The slices of the GIN index the docs need: all of them, or one now and then (see slices.keep)."""
        slices.keep(whole)


@contextmanager
def pg_pass() -> Iterator[None]:
    """The pass's commits do not wait for the disk. Its docs are derived from the files and each batch
    is committed with the progress it makes, so a crash loses both together and the pass reads them
    again. The connection's own setting comes back, also on failure."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        (before,) = cursor.fetchone()
        cursor.execute("SET synchronous_commit = off")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('synchronous_commit', %s, false)", [before])
