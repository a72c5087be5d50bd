"""Getting a batch of indexed entries into the database at the rate of parsing: packed into the
tape's chunks (tapes.packing), a few rows per thousands of entries, and the planner statistics
after a bulk load on PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from functools import lru_cache

import orjson
from django.conf import settings
from django.db import connection
from django.db.models import Model
from django.utils import timezone

from .models import Anchor, EntryChunk, Tape, Turn, db_text
from .packing import CHUNK, Batch, Chunk, decode

try:
    from ._lane import utc_text  # str() of a UTC datetime less its zone, in compiled code
except ImportError:  # pragma: no cover - `make setup` builds it
    utc_text = None

# After indexing this many entries at once, PostgreSQL's planner statistics are refreshed
# (ANALYZE): a table grown from nothing by a bulk load otherwise plans every page as if empty.
ANALYZE_AFTER = 50_000
# A chunk row's fields after its tape, and their types for a binary COPY (tape first).
CHUNK_FIELDS = ("first_pos", "last_pos", "count", "columns", "vocab", "tally")
CHUNK_TYPES = ("bigint", "integer", "integer", "integer", "bytea", "text", "text")


def unsynced() -> None:
    """In a batch's transaction: PostgreSQL commits it without waiting for its log on disk. The
    index is derived from the files: a server crash loses at most the last batches, each whole and
    with the tape's progress in it, and the next run indexes them again."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def whole_chunks(entries: int) -> int:
    """`entries` rounded down to whole chunks (one at least): batches of that size fill chunks exactly."""
    return max(CHUNK, entries // CHUNK * CHUNK)


class Last:
    """The tape's last chunk as the indexing run last wrote it (its first position, its entries): a
    run that owns the tape's lease is its only writer, so its next batch goes on from here without
    reading it back."""

    def __init__(self, first_pos: int, chunk: Chunk) -> None:
        self.first_pos, self.chunk = first_pos, chunk


def append(
    tape: Tape, batch: Batch, last: Last | None = None, seen: Callable[[Chunk], None] | None = None
) -> Last | None:
    """Add a batch after the tape's last entry: the last chunk filled up first, then new ones.
    `last`: that chunk as the previous call returned it (None: read it from the database); `seen`
    is given the batch's entries as packed, before they are written."""
    if not len(batch):
        return last
    if last is None:
        row = EntryChunk.objects.filter(tape=tape).order_by("-first_pos")
        found = row.values_list("first_pos", "columns", "vocab").first()
        last = None if found is None else Last(found[0], decode(bytes(found[1]), found[2]))
    growing = last is not None and last.chunk.count < CHUNK
    merged = (last.chunk if growing else Chunk()).extended(batch)
    if seen is not None:
        seen(merged.sliced(last.chunk.count if growing else 0, merged.count))
    chunks = [merged.sliced(at, at + CHUNK) for at in range(0, merged.count, CHUNK)]
    rows = [_chunk_values(chunk) for chunk in chunks]
    if growing:
        # Updated in place, never deleted and made again: a page reading the tape meanwhile
        # finds the chunk where it started, with the new entries or without. (A batch of whole
        # chunks, index._Run.size, grows none in a cold index.)
        _, last_pos, count, columns, vocab, tally = rows.pop(0)
        EntryChunk.objects.filter(tape=tape, first_pos=last.first_pos).update(
            last_pos=last_pos, count=count, columns=columns, vocab=vocab, tally=tally
        )
    insert_rows(EntryChunk, ("tape", *CHUNK_FIELDS), [(tape.pk, *row) for row in rows], CHUNK_TYPES)
    return Last(int(chunks[-1].columns["pos"][0]), chunks[-1])


def _chunk_values(chunk: Chunk) -> tuple[int, int, int, bytes, str, str]:
    pos = chunk.columns["pos"]
    return int(pos[0]), int(pos[-1]), chunk.count, chunk.blob(), chunk.vocab(), _json(chunk.tally())


def insert_rows(
    model: type[Model], names: tuple[str, ...], rows: list[tuple], types: tuple[str, ...]
) -> None:
    """Plain rows into a model's table: one binary COPY on PostgreSQL (`types` names the columns'
    types: the values go as they are, neither quoted as text in Python nor parsed as text by the
    server), INSERTs of many rows each on SQLite."""
    if not rows:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    columns = ", ".join(_column(model, name) for name in names)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(list(types))
                for row in rows:
                    copy.write_row(row)
        else:
            # Rows a statement, as many as its parameters allow (executemany takes a third longer), in
            # sqlite3's "?" marks: Django's cursor turns each "%s" into one by regex (1 ms a 1,000 rows).
            marks = "(" + ", ".join(["?"] * len(names)) + ")"
            per = max(1, connection.features.max_query_params // len(names))
            with connection.wrap_database_errors:
                for at in range(0, len(rows), per):
                    group = rows[at : at + per]
                    values = ", ".join([marks] * len(group))
                    sql = f"INSERT INTO {table} ({columns}) VALUES {values}"
                    cursor.cursor.execute(sql, [v for row in group for v in row])


def _column(model: type[Model], name: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(name).column)


def _json(value: dict) -> str:
    return orjson.dumps(value).decode()


def analyze() -> None:
    """Refresh PostgreSQL's statistics of the tables a bulk load grew (SQLite plans without them).

    Of the chunks and anchors, only the columns that pages filter by: the sample would otherwise
    read every sampled chunk's arrays (hundreds of kB each, out of line), and every anchor's state
    and roles (four fifths of the ANALYZE of the real tape's 8,248 anchors), for statistics
    nobody uses."""
    if connection.vendor != "postgresql":
        return
    quote = connection.ops.quote_name
    chunk_columns = ("tape", "first_pos", "last_pos", "count")
    anchor_columns = ("tape", "pos", "phase", "phase_index", "name")
    turn_columns = ("tape", "number", "started_us", "ended_us")
    with connection.cursor() as cursor:
        for model, names in ((EntryChunk, chunk_columns), (Anchor, anchor_columns), (Turn, turn_columns)):
            columns = ", ".join(_column(model, name) for name in names)
            cursor.execute(f"ANALYZE {quote(model._meta.db_table)} ({columns})")
        cursor.execute(f"ANALYZE {quote(Tape._meta.db_table)}")


# --- anchor and phase rows: plain statements, no model instance or per-field preparation ---------

# An anchor row's fields after its tape, as its model names them (AnchorRow's slots).
ANCHOR_FIELDS = (
    *("pos", "name", "date", "phase", "state", "entries", "phase_index", "end_pos", "started_at"),
    *("ended_at", "prompt_tokens", "completion_tokens", "cached_tokens", "tool_calls", "errors"),
    *("model", "roles"),
)
# Their types for a binary COPY, the tape's first.
ANCHOR_TYPES = (
    *("bigint", "integer", "text", "timestamptz", "boolean", "text", "integer", "integer", "integer"),
    *("timestamptz", "timestamptz", "bigint", "bigint", "bigint", "integer", "integer"),
    *("text", "jsonb"),
)


class AnchorRow:
    """An Anchor row as the indexer gathers it: its fields, without a model instance's cost (thousands
    a tape); written as plain rows here."""

    __slots__ = ANCHOR_FIELDS

    def __init__(
        self,
        pos: int,
        name: str = "",
        date: datetime | None = None,
        phase: bool = True,
        state: str = "",
        *,
        entries: int = 0,
        phase_index: int | None = None,
        end_pos: int | None = None,
        started_at: datetime | None = None,
        ended_at: datetime | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        cached_tokens: int | None = None,
        tool_calls: int = 0,
        errors: int = 0,
        model: str = "",
        roles: dict | None = None,
    ) -> None:
        self.pos, self.name, self.date, self.phase, self.state = pos, name, date, phase, state
        self.entries, self.phase_index, self.end_pos = entries, phase_index, end_pos
        self.started_at, self.ended_at = started_at, ended_at
        self.prompt_tokens, self.completion_tokens = prompt_tokens, completion_tokens
        self.cached_tokens = cached_tokens
        self.tool_calls, self.errors, self.model = tool_calls, errors, model
        self.roles = {} if roles is None else roles


def insert_anchors(tape_id: int, rows: list[AnchorRow]) -> None:
    """A batch's new anchor rows: one COPY on PostgreSQL, a few INSERTs on SQLite (insert_rows)."""
    when = _db_datetime()
    values = [_anchor_row(tape_id, row, when) for row in rows]
    if connection.vendor == "postgresql":
        values = [(*v[:-1], _jsonb(v[-1])) for v in values]
    insert_rows(Anchor, ("tape", *ANCHOR_FIELDS), values, ANCHOR_TYPES)


def update_phases(tape_id: int, rows: list[AnchorRow], fields: tuple[str, ...]) -> None:
    """`fields` of stored phase rows that went on in a batch: one executemany."""
    if not rows:
        return
    table = connection.ops.quote_name(Anchor._meta.db_table)
    sets = ", ".join(f"{_column(Anchor, name)} = %s" for name in fields)
    keys = f"{_column(Anchor, 'tape')} = %s AND {_column(Anchor, 'pos')} = %s"
    values = [(*_anchor_values(row, fields), tape_id, row.pos) for row in rows]
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET {sets} WHERE {keys}", values)


TURN_FIELDS = ("number", "first_pos", "started_us", "ended_us", "carry")
TURN_TYPES = ("bigint", "integer", "integer", "bigint", "bigint", "smallint")


def insert_turns(tape_id: int, rows: list[tuple[int, int, int | None, int | None, int]]) -> None:
    """A batch's new turn rows (TURN_FIELDS), as insert_anchors writes anchors."""
    insert_rows(Turn, ("tape", *TURN_FIELDS), [(tape_id, *row) for row in rows], TURN_TYPES)


def update_turns(tape_id: int, rows: list[tuple[int, int, int | None, int | None, int]]) -> None:
    """Stored turns (TURN_FIELDS) that went on in a batch: their times and carry, one executemany."""
    if not rows:
        return
    table = connection.ops.quote_name(Turn._meta.db_table)
    sets = ", ".join(f"{_column(Turn, name)} = %s" for name in TURN_FIELDS[2:])
    keys = f"{_column(Turn, 'tape')} = %s AND {_column(Turn, 'number')} = %s"
    values = [(start, end, carry, tape_id, n) for n, _, start, end, carry in rows]
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET {sets} WHERE {keys}", values)


def _anchor_row(tape_id: int, r: AnchorRow, when: Callable[[datetime], object]) -> tuple:
    """All of a new row's values, in ANCHOR_FIELDS order (_anchor_values, unrolled: thousands a tape)."""
    date = None if r.date is None else when(r.date)
    return (
        tape_id,
        r.pos,
        db_text(r.name),
        date,
        r.phase,
        db_text(r.state),
        r.entries,
        r.phase_index,
        r.end_pos,
        # (a phase starts at its anchor's own date, most often: the same object)
        date if r.started_at is r.date else None if r.started_at is None else when(r.started_at),
        None if r.ended_at is None else when(r.ended_at),
        r.prompt_tokens,
        r.completion_tokens,
        r.cached_tokens,
        r.tool_calls,
        r.errors,
        db_text(r.model),
        _roles(r.roles),
    )


def _anchor_values(row: AnchorRow, names: tuple[str, ...]) -> list[object]:
    """The row's values as the model's fields would prepare them for this database."""
    values: list[object] = []
    when = _db_datetime()
    for name in names:
        value = getattr(row, name)
        if isinstance(value, datetime):
            value = when(value)
        elif name == "roles":
            value = _roles(value)
        values.append(db_text(value))
    return values


def _roles(roles: dict) -> str:
    """As JSONField writes it (no encoder); jsonb parses it on PostgreSQL, and refuses U+0000."""
    return _roles_text(tuple(roles.items()))  # a tape's phases hold the same few role counts


@lru_cache(maxsize=4096)
def _roles_text(roles: tuple[tuple[str, int], ...]) -> str:
    return json.dumps({db_text(role): n for role, n in roles})


@lru_cache(maxsize=4096)
def _jsonb(text: str) -> object:
    """Roles' JSON text as a binary COPY sends it to a jsonb column (a tape's phases repeat a few)."""
    from psycopg.types.json import Jsonb  # (installed with PostgreSQL's extra only)

    return Jsonb(text, dumps=str)


def _db_datetime() -> Callable[[datetime], object]:
    """A date as DateTimeField prepares it for this database (USE_TZ: a naive one is taken in the
    default zone, as the field does, without its warning)."""
    adapt, zone = connection.ops.adapt_datetimefield_value, timezone.get_default_timezone()
    if connection.vendor == "sqlite" and settings.USE_TZ:
        # SQLite's adapt_datetimefield_value inlined (make_naive in the connection's zone, then str):
        # three dates an anchor row, thousands of rows a tape.
        stored_in = connection.timezone

        def on_sqlite(value: datetime) -> object:
            if value.tzinfo is UTC and stored_in is UTC:  # as below, for the dates Bub writes
                # str(value) less its "+00:00": 0.1 µs compiled, 0.8 in Python, 1.3 asking the zone
                if utc_text is not None:
                    return utc_text(value)
                return value.date().isoformat() + " " + value.time().isoformat()
            if value.tzinfo is None or value.utcoffset() is None:
                value = timezone.make_aware(value, zone)
            return str(value.astimezone(stored_in).replace(tzinfo=None))

        return on_sqlite

    def prepared(value: datetime) -> object:
        if value.tzinfo is None or value.utcoffset() is None:
            value = timezone.make_aware(value, zone)
        return adapt(value)

    return prepared
