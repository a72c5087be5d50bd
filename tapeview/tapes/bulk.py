"""Getting a batch of entry rows into the database at the rate of parsing: the engine's own bulk
path (PostgreSQL's COPY, SQLite's prepared executemany) and the planner statistics after it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from django.db import connection

from .models import Anchor, EntryRow, Tape

# After indexing this many rows at once, PostgreSQL's planner statistics are refreshed (ANALYZE):
# a table grown from nothing by a bulk load otherwise plans every page as if it were empty.
ANALYZE_AFTER = 50_000
COLUMNS = (
    "tape",
    "pos",
    "offset",
    "length",
    "entry_id",
    "kind",
    "name",
    "date",
    "readable",
    "is_error",
    "context",
)


def analyze() -> None:
    """Refresh PostgreSQL's statistics of the tables a bulk load grew (SQLite plans without them)."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for model in (EntryRow, Anchor, Tape):
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def date_adapter() -> Callable[[datetime | None], object]:
    """How a date goes into a row of this engine."""
    return sqlite_datetime if connection.vendor == "sqlite" else connection.ops.adapt_datetimefield_value


def sqlite_datetime(value: datetime | None) -> str | None:
    """What Django's SQLite backend stores for an aware datetime (naive UTC text), minus its overhead."""
    if value is None:
        return None
    if value.utcoffset():
        value = value.astimezone(UTC)
    return str(value.replace(tzinfo=None))


def _columns() -> str:
    qn = connection.ops.quote_name
    return ", ".join(qn(EntryRow._meta.get_field(name).column) for name in COLUMNS)


def insert(cursor, rows: list[tuple]) -> None:
    """Write a batch of entry rows: PostgreSQL's COPY, else one prepared INSERT run for every row
    (the ORM's per-row SQL compilation cost 10x the parsing, see bench/)."""
    table = connection.ops.quote_name(EntryRow._meta.db_table)
    if connection.vendor == "postgresql":
        with cursor.cursor.copy(f"COPY {table} ({_columns()}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    marks = ", ".join(["%s"] * len(COLUMNS))
    cursor.executemany(f"INSERT INTO {table} ({_columns()}) VALUES ({marks})", rows)
