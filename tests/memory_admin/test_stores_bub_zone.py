"""Reading Bub memory zones from real sample tapes and small hand-built ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_admin.stores.bub_zone import changes, current, read_zones
from tapeview.sources.bub import scan

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bub"
HAND = FIXTURES / "hand_memory_zone.jsonl"
PR33 = FIXTURES / "memory_zone_pr33_unmerged.jsonl"
PREFERENCE = "I prefer Python 3.12 and always want type hints."
FRESH = "Fresh start: prefers concise answers."


def zones_of(path: Path):
    return read_zones(scan(path))


def anchor(name: str, version: object) -> dict:
    return {"kind": "anchor", "payload": {"name": name, "state": {"version": version}}}


def opened(version: object) -> dict:
    return anchor("memory/open", version)


def sealed(version: object) -> dict:
    return anchor("memory/seal", version)


def long_term(content: str, updated_at: str = "2026-11-22T01:00:00+00:00") -> dict:
    data = {"content": content, "updated_at": updated_at}
    return {"kind": "event", "payload": {"name": "memory.long_term", "data": data}}


def daily(date: str, note: str, updated_at: str = "2026-11-22T01:00:00+00:00") -> dict:
    data = {"date": date, "content": f"# {date}\n\n{note}", "updated_at": updated_at}
    return {"kind": "event", "payload": {"name": "memory.daily", "data": data}}


def message(text: str) -> dict:
    return {"kind": "message", "payload": {"role": "user", "content": text}}


def write_tape(tmp_path: Path, *lines: dict | str) -> Path:
    """A tape in the 0.5.1 line format; a str line is written as is (to break things)."""
    path = tmp_path / "tape.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for i, line in enumerate(lines, start=1):
            if isinstance(line, str):
                f.write(line + "\n")
            else:
                entry = {"id": i, **line, "meta": {}, "date": f"2026-11-22T01:00:{i:02d}+00:00"}
                f.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return path


@pytest.mark.parametrize(
    "path, versions",
    [(HAND, [1, 2, 3, 4, 5, 6, 7, 8]), (PR33, [1, 2, 3, 4, 5, 6, 7, 8, 9])],
    ids=["hand", "pr33"],
)
def test_every_sealed_version_of_a_sample_is_a_zone_in_file_order(path: Path, versions: list[int]) -> None:
    assert [z.version for z in zones_of(path)] == versions


@pytest.mark.parametrize("path, version", [(HAND, 8), (PR33, 9)], ids=["hand", "pr33"])
def test_the_current_zone_of_a_sample_is_the_fresh_start_after_the_clear(path: Path, version: int) -> None:
    zone = current(zones_of(path))

    assert zone.version == version
    assert zone.long_term == FRESH
    assert zone.daily == {}


def test_a_zone_knows_where_it_sits_in_the_tape_and_when_it_was_sealed() -> None:
    zone = current(zones_of(HAND))

    assert (zone.open_pos, zone.seal_pos) == (44, 46)
    assert zone.date.isoformat() == "2026-11-22T01:37:39.291863+00:00"
    assert zone.updated_at == "2026-11-22T01:37:39.291721+00:00"


def test_a_pr33_era_zone_has_no_date_but_still_an_updated_at() -> None:
    zone = current(zones_of(PR33))

    assert zone.date is None
    assert zone.updated_at == "2026-11-22T01:34:24.319470+00:00"


def test_daily_notes_are_read_newest_date_first_with_their_text() -> None:
    before_prune = {z.version: z for z in zones_of(PR33)}[6]

    assert before_prune.long_term == PREFERENCE + "\nProject codename is Bub."
    assert before_prune.daily == {
        "2026-11-22": "# 2026-11-22\n\nRefactored tape store; fixed reset bug.",
        "2026-11-21": "# 2026-11-21\n\nDesigned memory zone layout",
        "2026-10-08": "# 2026-10-08\n\nVery old note",
    }
    assert list(before_prune.daily) == ["2026-11-22", "2026-11-21", "2026-10-08"]


def test_the_history_of_the_hand_sample_reads_as_what_each_version_did() -> None:
    assert [(c.version, c.summary) for c in changes(zones_of(HAND))] == [
        (1, "first version (empty)"),
        (2, "long-term memory added"),
        (3, "daily 2026-11-22 added"),
        (4, "daily 2026-11-21 added"),
        (5, "daily 2026-10-08 added"),
        (6, "daily 2026-10-08 removed"),
        (7, "cleared"),
        (8, "long-term memory added"),
    ]


def test_the_history_of_the_pr33_sample_shows_the_edit_the_prune_and_the_clear() -> None:
    history = {c.version: c for c in changes(zones_of(PR33))}

    assert history[6].summary == "long-term memory edited"
    assert history[6].long_term_changed
    assert history[7].summary == "daily 2026-10-08 removed"
    assert (history[7].daily_removed, history[7].daily_added, history[7].long_term_changed) == (
        ["2026-10-08"],
        [],
        False,
    )
    assert history[8].summary == "cleared"
    assert history[8].daily_removed == ["2026-11-22", "2026-11-21"]
    assert history[8].long_term_changed


def test_a_note_appended_to_an_existing_day_shows_as_that_day_edited(tmp_path: Path) -> None:
    path = write_tape(
        tmp_path,
        opened(1), daily("2026-11-22", "one"), sealed(1),
        opened(2), long_term("likes tea"), daily("2026-11-22", "one\ntwo"), daily("2026-11-21", "x"),
        sealed(2),
    )  # fmt: skip

    change = changes(zones_of(path))[1]

    assert change.summary == "long-term memory added; daily 2026-11-21 added; daily 2026-11-22 edited"
    assert change.daily_changed == ["2026-11-22"]
    assert changes(zones_of(path))[0].summary == "first version: daily 2026-11-22 added"


def test_a_later_but_lower_version_does_not_win(tmp_path: Path) -> None:
    path = write_tape(
        tmp_path,
        opened(1), sealed(1),
        opened(3), long_term("version three"), sealed(3),
        opened(2), long_term("written later as version two"), sealed(2),
    )  # fmt: skip

    zone = current(zones_of(path))

    assert (zone.version, zone.long_term) == (3, "version three")


def test_history_is_in_version_order_even_when_the_file_is_not(tmp_path: Path) -> None:
    path = write_tape(
        tmp_path,
        opened(1), sealed(1),
        opened(3), long_term("three"), sealed(3),
        opened(2), long_term("two"), sealed(2),
    )  # fmt: skip

    assert [(c.version, c.summary) for c in changes(zones_of(path))] == [
        (1, "first version (empty)"),
        (2, "long-term memory added"),
        (3, "long-term memory edited"),
    ]


def test_on_a_version_tie_the_agent_keeps_the_first_in_the_file(tmp_path: Path) -> None:
    path = write_tape(
        tmp_path,
        opened(2), long_term("first"), sealed(2),
        opened(2), long_term("second"), sealed(2),
    )  # fmt: skip

    assert current(zones_of(path)).long_term == "first"


def test_a_malformed_line_inside_a_zone_is_skipped_and_reported(tmp_path: Path) -> None:
    path = write_tape(
        tmp_path,
        opened(1),
        long_term("kept"),
        '{"id": 3, "kind": "event", "payload": {"name": "memory.daily", "da',
        daily("2026-11-21", "also kept"),
        sealed(1),
    )

    zone = current(zones_of(path))

    assert zone.long_term == "kept"
    assert list(zone.daily) == ["2026-11-21"]
    assert zone.unreadable == (3,)


def test_an_open_without_a_seal_is_not_a_zone(tmp_path: Path) -> None:
    path = write_tape(
        tmp_path,
        opened(1), long_term("sealed"), sealed(1),
        opened(2), long_term("never sealed"),
        message("the write was cut short"),
    )  # fmt: skip

    zones = zones_of(path)

    assert [z.version for z in zones] == [1]
    assert current(zones).long_term == "sealed"


def test_a_seal_without_its_open_is_not_a_zone(tmp_path: Path) -> None:
    path = write_tape(tmp_path, opened(1), sealed(1), long_term("stray"), sealed(2))

    assert [z.version for z in zones_of(path)] == [1]


@pytest.mark.parametrize("version", ["2", 2.0, True, None, [2]])
def test_a_zone_whose_version_is_not_an_int_is_ignored(tmp_path: Path, version: object) -> None:
    path = write_tape(tmp_path, opened(1), sealed(1), opened(version), long_term("odd"), sealed(version))

    assert [z.version for z in zones_of(path)] == [1]


def test_a_version_below_one_is_read_but_never_current(tmp_path: Path) -> None:
    path = write_tape(tmp_path, opened(0), long_term("zero"), sealed(0))

    zones = zones_of(path)

    assert [z.version for z in zones] == [0]
    assert current(zones) is None


def test_entries_between_open_and_seal_that_are_not_memory_events_are_ignored(tmp_path: Path) -> None:
    path = write_tape(
        tmp_path,
        opened(1),
        message("hello"),
        {"kind": "event", "payload": {"name": "run", "data": {"status": "ok", "content": "not memory"}}},
        anchor("phase-1", 1),
        long_term("the memory"),
        {"kind": "event", "payload": {"name": "memory.daily", "data": "not an object"}},
        {"kind": "event", "payload": {"name": "memory.daily", "data": {"content": "no date"}}},
        sealed(1),
    )

    zone = current(zones_of(path))

    assert (zone.long_term, zone.daily, zone.unreadable) == ("the memory", {}, ())


def test_daily_notes_written_out_of_order_are_read_newest_first(tmp_path: Path) -> None:
    path = write_tape(tmp_path, opened(1), daily("2026-10-01", "old"), daily("2026-11-22", "new"), sealed(1))

    assert list(current(zones_of(path)).daily) == ["2026-11-22", "2026-10-01"]


def test_updated_at_is_the_latest_among_the_zone_events(tmp_path: Path) -> None:
    path = write_tape(
        tmp_path,
        opened(1),
        long_term("a", updated_at="2026-11-22T03:00:00+02:00"),
        daily("2026-11-22", "b", updated_at="2026-11-22T02:00:00+00:00"),
        daily("2026-11-21", "c", updated_at="not a date"),
        sealed(1),
    )

    assert current(zones_of(path)).updated_at == "2026-11-22T02:00:00+00:00"


def test_a_tape_of_garbage_has_no_zones(tmp_path: Path) -> None:
    path = write_tape(
        tmp_path,
        "not json",
        "[1, 2]",
        '{"id": "x", "kind": "anchor", "payload": {"name": "memory/seal", "state": {"version": 1}}}',
        '{"id": 4, "kind": "anchor", "payload": "memory/open"}',
        {"kind": "anchor", "payload": {"name": "memory/open", "state": "version 1"}},
        {"kind": "anchor", "payload": {"name": "memory/seal"}},
    )

    zones = zones_of(path)

    assert zones == []
    assert current(zones) is None
    assert changes(zones) == []
