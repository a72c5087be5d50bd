"""How a batch of the index is written (tapes.bulk, lease.save): anchor and phase rows as plain
statements keep every field as the model would, a cold index writes each chunk once, and on
PostgreSQL a batch does not wait for the disk and ANALYZE leaves the chunks' arrays alone."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import orjson
import pytest
from django.db import connection
from django.db.models import DateTimeField
from django.test.utils import CaptureQueriesContext

from tapeview.sources import parse_sources
from tapeview.tapes import bulk, discovery, filecopy, index, phases, signals
from tapeview.tapes.models import Anchor, EntryChunk, FileBlock, FileCopy, Tape
from tapeview.tapes.packing import CHUNK

pytestmark = pytest.mark.django_db

NAMES = [
    "phase/tab\there",
    "phase/new\nline",
    "phase/back\\slash \\N \\.",
    "phase/\"quoted\" 'single'",
    "phase/carriage\rreturn",
    "phase/ünïcödé ☃ 𝄞",
    "memory/not a phase\t\\",
]
STATE = {"text": 'a\tb\nc\\d "e" \\N', "nested": {"list": [1, "x\\y"]}}


def entry(i: int, kind: str, payload: object, second: int = 0) -> bytes:
    date = f"2026-11-22T01:{i // 60 % 60:02d}:{second or i % 60:02d}+05:30"
    return orjson.dumps({"id": i, "kind": kind, "payload": payload, "meta": {}, "date": date}) + b"\n"


def sync(root: Path, label: str = "t") -> Tape:
    discovery.sync(parse_sources([f"{label}=bub:{root}"]))
    return Tape.objects.get(source=label)


def test_anchor_and_phase_rows_keep_every_character_and_count(tmp_path: Path) -> None:
    lines, i = [], 1
    for name in NAMES:
        lines.append(entry(i, "anchor", {"name": name, "state": STATE}))
        i += 1
        for role in ("user", "assistant", "user"):
            lines.append(entry(i, "message", {"role": role, "content": "c"}))
            i += 1
    (tmp_path / "a__b.jsonl").write_bytes(b"".join(lines))
    tape = sync(tmp_path)
    rows = list(Anchor.objects.filter(tape=tape).order_by("pos").values())
    preview = orjson.dumps(STATE).decode()
    assert [(r["pos"], r["name"], r["state"], r["phase"]) for r in rows] == [
        (1 + 4 * n, name, preview, not name.startswith("memory/")) for n, name in enumerate(NAMES)
    ]
    first = rows[0]
    assert first["date"] == datetime(2026, 11, 21, 19, 30, 1, tzinfo=UTC)
    assert (first["phase_index"], first["entries"], first["end_pos"]) == (1, 3, 4)
    assert first["roles"] == {"user": 2, "assistant": 1}
    assert (first["started_at"], first["ended_at"]) == (
        datetime(2026, 11, 21, 19, 30, 1, tzinfo=UTC),
        datetime(2026, 11, 21, 19, 30, 4, tzinfo=UTC),
    )
    # The memory anchor starts no phase: the phase before it goes on through it.
    last_phase = rows[-2]
    assert (last_phase["phase_index"], last_phase["entries"], last_phase["end_pos"]) == (6, 7, 28)
    assert [p.anchor.name for p in phases.in_order(tape)[0]] == NAMES[:-1]
    assert tape.last_anchor == NAMES[-1]


def test_a_phase_that_goes_on_across_batches_is_written_again(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(index._Run, "size", 5)
    lines = [entry(1, "anchor", {"name": "phase/long", "state": {}})]
    lines += [entry(i, "message", {"role": "user" if i % 2 else "assistant"}) for i in range(2, 23)]
    (tmp_path / "a__b.jsonl").write_bytes(b"".join(lines))
    tape = sync(tmp_path)
    row = Anchor.objects.get(tape=tape)
    assert (row.entries, row.end_pos, row.roles) == (21, 22, {"assistant": 11, "user": 10})
    assert row.ended_at == datetime(2026, 11, 21, 19, 30, 22, tzinfo=UTC)


def test_a_cold_index_writes_every_chunk_once(tmp_path: Path) -> None:
    entries = 2 * index._Run.size + 100
    lines = [entry(i, "message", {"role": "user"}, 1) for i in range(1, entries + 1)]
    (tmp_path / "a__b.jsonl").write_bytes(b"".join(lines))
    with CaptureQueriesContext(connection) as queries:
        tape = sync(tmp_path)
    table = EntryChunk._meta.db_table
    assert not [q["sql"] for q in queries if q["sql"].startswith("UPDATE") and table in q["sql"]]
    counts = list(EntryChunk.objects.filter(tape=tape).order_by("first_pos").values_list("count", flat=True))
    assert sum(counts) == tape.entries == entries
    assert counts[:-1] == [CHUNK] * (len(counts) - 1)


def test_a_tape_grown_mid_chunk_fills_its_last_chunk_first(tmp_path: Path) -> None:
    path = tmp_path / "a__b.jsonl"
    path.write_bytes(b"".join(entry(i, "message", {"role": "user"}, 1) for i in range(1, 101)))
    tape = sync(tmp_path)
    with path.open("ab") as f:
        f.write(b"".join(entry(i, "message", {"role": "user"}, 1) for i in range(101, 5001)))
    assert index.refresh(tape)
    counts = list(EntryChunk.objects.filter(tape=tape).order_by("first_pos").values_list("count", flat=True))
    assert counts == [CHUNK, 5000 - CHUNK]


def test_a_copy_made_a_step_at_a_time_reads_no_block_back(tmp_path: Path, monkeypatch, settings) -> None:
    monkeypatch.setattr(filecopy, "BLOCK", 1000)
    monkeypatch.setattr(filecopy, "STEP", 4000)
    path = tmp_path / "a__b.jsonl"
    data = b"".join(entry(i, "message", {"role": "user"}) for i in range(1, 400))
    path.write_bytes(data)
    with CaptureQueriesContext(connection) as queries:
        assert filecopy.keep(str(path), append_only=True)
    data_column = connection.ops.quote_name("data")
    assert not [q["sql"] for q in queries if q["sql"].startswith("SELECT") and data_column in q["sql"]]
    copy = FileCopy.objects.get(digest=filecopy.digest(settings.TAPEVIEW_HOST, str(path)))
    blocks = FileBlock.objects.filter(copy=copy).order_by("start").values_list("data", flat=True)
    assert b"".join(bytes(b) for b in blocks) == data
    with path.open("ab") as f:  # an append grows the last block: its bytes are read then
        f.write(entry(400, "message", {"role": "user"}))
    assert filecopy.keep(str(path), append_only=True)
    blocks = FileBlock.objects.filter(copy=copy).order_by("start").values_list("data", flat=True)
    assert b"".join(bytes(b) for b in blocks) == path.read_bytes()


postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's settings: SQLite has neither"
)


@postgresql_only
def test_a_batch_commits_without_waiting_for_the_disk(tmp_path: Path) -> None:
    seen = []

    def look(sender: object, tape: Tape, **kwargs: object) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SHOW synchronous_commit")
            seen.append(cursor.fetchone()[0])

    (tmp_path / "a__b.jsonl").write_bytes(entry(1, "message", {"role": "user"}))
    signals.entries_indexed.connect(look)
    try:
        sync(tmp_path)
    finally:
        signals.entries_indexed.disconnect(look)
    assert seen == ["off"]


@postgresql_only
def test_analyze_leaves_the_chunks_arrays_and_the_anchors_state_alone(tmp_path: Path) -> None:
    lines = [entry(i, "anchor", {"name": f"phase/{i}", "state": STATE}) for i in range(1, 10)]
    lines += [entry(i, "message", {"role": "u"}) for i in range(10, 50)]
    (tmp_path / "a__b.jsonl").write_bytes(b"".join(lines))
    sync(tmp_path)
    bulk.analyze()
    analyzed = {}
    with connection.cursor() as cursor:
        for model in (EntryChunk, Anchor):
            cursor.execute("SELECT attname FROM pg_stats WHERE tablename = %s", [model._meta.db_table])
            analyzed[model] = {row[0] for row in cursor.fetchall()}
    assert {"tape_id", "first_pos", "last_pos"} <= analyzed[EntryChunk]
    assert not analyzed[EntryChunk] & {"columns", "vocab", "tally"}
    assert {"tape_id", "pos", "phase", "phase_index", "name"} <= analyzed[Anchor]
    assert not analyzed[Anchor] & {"state", "roles", "model", "started_at", "ended_at"}


def test_roles_are_stored_as_json_as_the_model_would(tmp_path: Path) -> None:
    (tmp_path / "a__b.jsonl").write_bytes(
        entry(1, "anchor", {"name": "phase/x", "state": {}}) + entry(2, "message", {"role": 'us"er\\'})
    )
    tape = sync(tmp_path)
    row = Anchor.objects.get(tape=tape)
    assert row.roles == {'us"er\\': 1}
    made = Anchor.objects.create(tape=tape, pos=99, name="orm", roles={'us"er\\': 1})
    with connection.cursor() as cursor:
        table = connection.ops.quote_name(Anchor._meta.db_table)
        cursor.execute(f"SELECT roles FROM {table} WHERE id IN (%s, %s) ORDER BY pos", [row.pk, made.pk])
        stored = [r[0] for r in cursor.fetchall()]
    decoded = [json.loads(r) if isinstance(r, str) else r for r in stored]
    assert decoded[0] == decoded[1] and stored[0] == stored[1]


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/New_York"])
def test_anchor_dates_are_stored_as_the_field_stores_them(settings, monkeypatch, zone, compiled):
    """The anchor rows' dates (bulk._db_datetime, inlined on SQLite, a UTC date's text made in
    tapes/_lane.c where it is built) are what DateTimeField would write for every kind of date an
    agent's line gives: UTC, other offsets, naive, whole seconds, around a DST change, whatever the
    default time zone."""
    settings.TIME_ZONE = zone
    if not compiled:
        monkeypatch.setattr(bulk, "utc_text", None)
    field = DateTimeField()
    field.set_attributes_from_name("date")
    dates = [
        datetime(2026, 11, 22, 1, 37, 38, 956160, tzinfo=UTC),
        datetime(2026, 11, 22, 1, 37, 38, tzinfo=UTC),
        datetime(2026, 11, 22, 1, 37, 38, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(2026, 3, 8, 2, 30, tzinfo=ZoneInfo("America/New_York")),
        datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=ZoneInfo("America/New_York")),
        datetime(1, 1, 1, 0, 0, 1, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 1, 1, tzinfo=UTC),
        datetime(987, 6, 5, 4, 3, 2, 10, tzinfo=UTC),
    ]
    prepared = bulk._db_datetime()
    for value in dates:
        assert prepared(value) == field.get_db_prep_value(value, connection), value
    naive = datetime(2026, 11, 22, 1, 37, 38, 956160)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the field warns of a naive date; the bulk path does not
        assert prepared(naive) == field.get_db_prep_value(naive, connection)


@pytest.mark.parametrize("extra", [0, 1, 2, 51, 52, 53, 160])
def test_anchor_rows_written_in_many_statements_are_all_there_as_given(tmp_path: Path, extra: int) -> None:
    (tmp_path / "a__b.jsonl").write_bytes(entry(1, "message", {"role": "user"}))
    tape = sync(tmp_path)
    rows = [
        bulk.AnchorRow(
            10 + n,
            f"phase/{n}\t\u00e9",
            datetime(2026, 11, 22, 1, 37, n % 60, n, tzinfo=UTC),
            bool(n % 2),
            f'{{"s": {n}}}',
            entries=n,
            phase_index=n or None,
            prompt_tokens=None if n % 3 else 2**40 + n,
            roles={"user": n},
        )
        for n in range(extra)
    ]
    bulk.insert_anchors(tape.pk, rows)
    stored = list(Anchor.objects.filter(tape=tape).order_by("pos").values(*bulk.ANCHOR_FIELDS))
    assert stored == [{name: getattr(row, name) for name in bulk.ANCHOR_FIELDS} for row in rows]
