"""Bring one tape's index up to date from its file: incremental by byte offset."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

import orjson
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from tapeview.sources import Entry as FileEntry
from tapeview.sources import TapeNotFound, reader

from . import signals
from .models import Anchor, EntryRow, Tape

BATCH = 5000
ENTRY_COLUMNS = (
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
LABEL_TRIES = 50
REREAD_TRIES = 3
REREAD_PAUSE = 0.05
STATE_PREVIEW = 300
Progress = Callable[[int], None]


def refresh(tape: Tape, progress: Progress | None = None) -> bool:
    """Index what changed in a tape's file since last time; True if anything was read."""
    try:
        st = os.stat(tape.path)
    except OSError:
        if tape.problem != "file missing":
            tape.problem = "file missing"
            tape.save(update_fields=["problem"])
        return False
    identity = (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns)
    if tape.indexed_at and identity == (tape.inode, tape.device, tape.size, tape.mtime_ns):
        return False
    try:
        if tape.append_only:
            _read_appended(tape, st, progress)
        else:
            _reread(tape, st, progress)
    except TapeNotFound:
        tape.problem = "file missing"
    tape.indexed_at = timezone.now()
    tape.save()
    return True


def _read_appended(tape: Tape, st: os.stat_result, progress: Progress | None) -> None:
    # Bub's own rule: a new inode or a shrink means the tape was reset or replaced.
    replaced = (tape.inode is not None and (st.st_ino, st.st_dev) != (tape.inode, tape.device)) or (
        st.st_size < tape.indexed_offset
    )
    if replaced:
        _reset(tape)
    _set_identity(tape, st)
    entries = reader(tape.kind).scan(Path(tape.path), tape.indexed_offset, tape.next_pos)
    _index_entries(tape, entries, progress)


def _reread(tape: Tape, st: os.stat_result, progress: Progress | None) -> None:
    """A file the agent rewrites wholesale: read it all again, but never trade a good read for a torn one."""
    source = reader(tape.kind)
    for attempt in range(REREAD_TRIES):
        entries = list(source.scan(Path(tape.path)))
        bad = next((e for e in entries if not e.readable), None)
        if bad is None:
            break
        # Caught mid-write (an agent without atomic renames): wait for the writer and look again.
        time.sleep(REREAD_PAUSE * (attempt + 1))
        st = os.stat(tape.path)
    _set_identity(tape, st)
    if bad is not None and tape.entries and not tape.unreadable:
        tape.problem = f"the file reads as damaged ({bad.problem}); showing the last good read"
        return
    _reset(tape)
    _set_identity(tape, st)
    _index_entries(tape, entries, progress)


def _set_identity(tape: Tape, st: os.stat_result) -> None:
    tape.device, tape.inode, tape.size, tape.mtime_ns, tape.problem = (
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        "",
    )


def _reset(tape: Tape) -> None:
    """Forget a tape's entries and statistics; its identity in the index (key, label) stays."""
    keep = {
        "id",
        "key",
        "source",
        "kind",
        "rel",
        "path",
        "name",
        "label",
        "role",
        "owner",
        "note",
        "append_only",
    }
    fresh = Tape()
    with transaction.atomic():
        EntryRow.objects.filter(tape=tape).delete()
        signals.tape_reset.send(sender=Tape, tape_id=tape.pk)
        Anchor.objects.filter(tape=tape).delete()
        for f in Tape._meta.concrete_fields:
            if f.name not in keep:
                setattr(tape, f.attname, getattr(fresh, f.attname))
        tape.save()


def _index_entries(tape: Tape, entries: Iterable[FileEntry], progress: Progress | None) -> None:
    adapt = _sqlite_datetime if connection.vendor == "sqlite" else connection.ops.adapt_datetimefield_value
    tape_id = tape.pk
    rows: list[tuple] = []
    batch: list[FileEntry] = []
    anchors: list[Anchor] = []
    phase_counts: dict[int, int] = {}
    start = tape.indexed_offset
    for e in entries:
        rows.append(
            (
                tape_id,
                e.pos,
                e.offset,
                e.length,
                e.id,
                e.kind,
                e.name[:200],
                adapt(e.date),
                e.readable,
                e.is_error,
                e.context,
            )
        )
        batch.append(e)
        _account(tape, e, anchors, phase_counts)
        tape.indexed_offset, tape.next_pos = e.offset + e.length, e.pos + 1
        if len(rows) >= BATCH:
            _flush(tape, rows, batch, anchors, phase_counts)
            if progress:
                progress(tape.indexed_offset - start)
            start = tape.indexed_offset
            rows, batch, anchors, phase_counts = [], [], [], {}
    _flush(tape, rows, batch, anchors, phase_counts)
    if progress and tape.indexed_offset > start:
        progress(tape.indexed_offset - start)


def _account(tape: Tape, e: FileEntry, anchors: list[Anchor], phase_counts: dict[int, int]) -> None:
    if not e.readable:
        tape.unreadable += 1
        return
    tape.entries += 1
    tape.last_id = e.id
    if e.date:
        tape.first_at = min(tape.first_at, e.date) if tape.first_at else e.date
        tape.last_at = max(tape.last_at, e.date) if tape.last_at else e.date
    tape.errors += e.is_error
    tape.tokens += e.tokens
    if e.prompt_tokens:
        tape.last_prompt_tokens, tape.last_cached_tokens = e.prompt_tokens, e.cached_tokens
    if e.is_anchor:
        tape.anchors += 1
        tape.last_anchor, tape.last_anchor_pos, tape.entries_since_anchor = e.name[:300], e.pos, 0
        state = e.payload.get("state") if isinstance(e.payload, dict) else None
        preview = orjson.dumps(state).decode()[:STATE_PREVIEW] if state else ""
        anchors.append(
            Anchor(tape=tape, pos=e.pos, name=e.name[:300], date=e.date, phase=e.phase, state=preview)
        )
        if e.phase:
            tape.phase_anchor_pos = e.pos
            return
    else:
        tape.entries_since_anchor += 1
    if tape.phase_anchor_pos is not None:
        phase_counts[tape.phase_anchor_pos] = phase_counts.get(tape.phase_anchor_pos, 0) + 1
    wants_label = tape.label == tape.name and tape.role == "tape" and tape.label_tries < LABEL_TRIES
    if wants_label and (e.kind == "message" or e.name == "loop.start"):
        tape.label_tries += 1
        tape.label = reader(tape.kind).session_label(tape.name, e) or tape.label


def _sqlite_datetime(value: datetime | None) -> str | None:
    """What Django's SQLite backend stores for an aware datetime (naive UTC text), minus its overhead."""
    if value is None:
        return None
    if value.utcoffset():
        value = value.astimezone(UTC)
    return str(value.replace(tzinfo=None))


def _insert_sql() -> str:
    table, qn = EntryRow._meta.db_table, connection.ops.quote_name
    columns = [EntryRow._meta.get_field(name).column for name in ENTRY_COLUMNS]
    return (
        f"INSERT INTO {qn(table)} ({', '.join(map(qn, columns))}) VALUES ({', '.join(['%s'] * len(columns))})"
    )


def _flush(
    tape: Tape, rows: list[tuple], batch: list[FileEntry], anchors: list[Anchor], phase_counts: dict[int, int]
) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        # Plain executemany: the ORM's per-row SQL compilation cost 10x the parsing (see bench/).
        cursor.executemany(_insert_sql(), rows)
        signals.entries_indexed.send(sender=Tape, tape=tape, entries=batch)
        Anchor.objects.bulk_create(anchors)
        for pos, n in phase_counts.items():
            Anchor.objects.filter(tape=tape, pos=pos).update(entries=F("entries") + n)
        tape.save()
