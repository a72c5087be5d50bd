"""A date filter follows the tapes as they change: a tape whose dates go back in time mid-way, a tape
appended to after a search, a tape reset with other dates. Each search answers from the index as it
is then, never from what an earlier search worked out."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from tapeview.search import catchup
from tapeview.tapes import discovery

from .test_dates import found
from .test_filters import write_tape

pytestmark = pytest.mark.django_db


def dated_line(n: int, when: str | None) -> str:
    entry = {"id": n, "kind": "message", "payload": {"role": "user", "content": f"needle e{n}"}, "meta": {}}
    if when is not None:
        entry["date"] = when
    return json.dumps(entry) + "\n"


def synced() -> None:
    discovery.sync()
    catchup.catch_up()


@pytest.fixture
def samples(served) -> Path:
    return served["samples"]


def test_a_tape_whose_dates_go_back_mid_way_keeps_exactly_its_entries_within(samples):
    # First and last dates of the tape: 5 January and 11 March; February holds only its first entry.
    dates = ["2026-02-10T10:00:00+00:00", "2026-01-05T10:00:00+00:00", "2026-03-11T10:00:00+00:00", None]
    write_tape(samples / "back.jsonl", dates)
    synced()
    assert found(since=date(2026, 2, 1), until=date(2026, 2, 28)) == {("back", 1)}
    assert found(until=date(2026, 1, 31)) == {("back", 2)}
    assert found(since=date(2026, 1, 6)) == {("back", 1), ("back", 3)}
    assert found(since=date(2026, 1, 1), until=date(2026, 12, 31)) == {("back", 1), ("back", 2), ("back", 3)}


def test_entries_appended_after_a_search_are_found_by_the_next_one(samples):
    write_tape(samples / "grows.jsonl", ["2025-06-01T10:00:00+00:00", "2025-06-02T10:00:00+00:00"])
    write_tape(samples / "still.jsonl", ["2026-02-03T10:00:00+00:00"])
    synced()
    february = {"since": date(2026, 2, 1), "until": date(2026, 2, 28)}
    assert found(**february) == {("still", 1)}
    with (samples / "grows.jsonl").open("a", encoding="utf-8") as f:
        f.write(dated_line(3, "2026-02-14T10:00:00+00:00") + dated_line(4, None))
        f.write(dated_line(5, "2026-03-01T00:00:00+00:00"))
    synced()
    assert found(**february) == {("still", 1), ("grows", 3)}
    assert found(since=date(2026, 3, 1)) == {("grows", 5)}
    assert found(until=date(2025, 12, 31)) == {("grows", 1), ("grows", 2)}


def test_a_tape_reset_with_other_dates_is_filtered_by_its_new_entries_alone(samples):
    write_tape(samples / "again.jsonl", [f"2026-02-{d:02d}T10:00:00+00:00" for d in range(1, 11)])
    synced()
    february = {"since": date(2026, 2, 1), "until": date(2026, 2, 28)}
    assert found(**february) == {("again", n) for n in range(1, 11)}
    # Made again, shorter, by an agent that started over: one entry in May, one undated.
    write_tape(samples / "again.jsonl", ["2026-05-05T10:00:00+00:00", None])
    synced()
    assert found(**february) == set()
    assert found(since=date(2026, 5, 1), until=date(2026, 5, 31)) == {("again", 1)}
    assert found(since=date(2020, 1, 1)) == {("again", 1)}
