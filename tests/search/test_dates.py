"""A date filter keeps exactly the entries dated within it: at a month's first and last moment, across
time zones, never an undated one, nothing for dates the wrong way round."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from tapeview.search import catchup, docs, engine
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .test_filters import write_tape

FIVE_EAST = timezone(timedelta(hours=5))


def write_tapes(samples: Path) -> None:
    write_tape(
        samples / "edges.jsonl",
        [
            "2026-01-31T23:59:59.999999+00:00",  # 1: January's last moment
            "2026-02-01T00:00:00+00:00",  # 2: February's first
            None,  # 3: no date
            "2026-02-28T23:59:59.999999+00:00",  # 4: February's last
            "2026-03-01T00:00:00+00:00",  # 5: March's first
        ],
    )
    # Local months that are not the UTC ones: 1 is February in UTC, 2 is January.
    write_tape(samples / "zones.jsonl", ["2026-03-01T04:30:00+05:00", "2026-02-01T01:00:00+02:00"])
    write_tape(samples / "later.jsonl", ["2026-02-15T12:00:00+00:00", "2031-06-01T00:00:00+00:00"])
    write_tape(samples / "old.jsonl", ["2023-05-01T12:00:00+00:00", "2023-05-02T12:00:00+00:00"])


def found(**filters: object) -> set[tuple[str, int]]:
    """(tape name, pos) of every entry that matches `needle`, copies included."""
    hits = engine.search("needle", limit=1000, **filters)
    names = dict(Tape.objects.values_list("key", "name"))
    return {(names[h.tape_key], e.pos) for h in hits for e in (h, *h.copies)}


@pytest.fixture
def dated(served) -> None:
    write_tapes(served["samples"])
    discovery.sync()
    catchup.catch_up()


FEBRUARY = {("edges", 2), ("edges", 4), ("zones", 1), ("later", 1)}
CASES = [
    ({"since": date(2026, 2, 1), "until": date(2026, 2, 28)}, FEBRUARY),
    ({"since": datetime(2026, 2, 1, tzinfo=UTC), "until": datetime(2026, 2, 28, 23, 59, 59, 999999, UTC)}, FEBRUARY),
    ({"since": datetime(2026, 3, 1, tzinfo=UTC)}, {("edges", 5), ("later", 2)}),
    # 04:00 at five hours east is 23:00 the day before in UTC: February's last hour.
    ({"since": datetime(2026, 3, 1, 4, 0, tzinfo=FIVE_EAST)}, {("zones", 1), ("edges", 4), ("edges", 5), ("later", 2)}),
    ({"until": datetime(2026, 1, 31, 23, 59, 59, 999999, UTC)}, {("edges", 1), ("zones", 2), ("old", 1), ("old", 2)}),
    ({"since": datetime(2026, 2, 1, 3, 0, tzinfo=FIVE_EAST), "until": date(2026, 2, 1)}, {("edges", 1), ("zones", 2), ("edges", 2)}),
    ({"since": date(2030, 1, 1)}, {("later", 2)}),
    ({"until": date(2023, 5, 1)}, {("old", 1)}),
    ({"since": date(2026, 3, 1), "until": date(2026, 2, 1)}, set()),
]  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bitmap_ids", [docs.BITMAP_IDS, 1], ids=["tapes-as-bitmap", "tape-ids-past-a-bitmap"]
)
@pytest.mark.parametrize("dates, expected", CASES)
def test_a_date_filter_keeps_the_entries_dated_within_it_to_the_moment(
    dated, dates, expected, bitmap_ids, monkeypatch
):
    # On SQLite the tapes in range are a bitmap of their ids, or past BITMAP_IDS a subquery: the same entries.
    monkeypatch.setattr(docs, "BITMAP_IDS", bitmap_ids)
    assert found(**dates) == expected
    assert engine.count("needle", **dates).total == len(expected)


@pytest.mark.django_db
def test_dates_before_every_tape_and_years_apart_keep_every_dated_entry_between(dated):
    assert found(since=date(2020, 1, 1)) == found() - {("edges", 3)}
    assert found(since=date(2023, 5, 2), until=date(2031, 5, 31)) == found() - {
        ("edges", 3), ("old", 1), ("later", 2)
    }  # fmt: skip
