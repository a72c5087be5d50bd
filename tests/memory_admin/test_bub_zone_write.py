"""Editing Bub memory zones: each edit is one complete new zone version, readable as the newest."""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from memory_admin.stores import bub_zone_write
from memory_admin.stores.bub_zone import (
    current,
    current_zone,
    cuts_context,
    memory_sidecar,
    prune_preview,
    read_zones,
    where_zone_lives,
    zone_text,
)
from memory_admin.stores.bub_zone_write import add_daily, clear, prune, restore, write_long_term
from memory_admin.stores.model import StaleEdit, StoreError
from tapeview.sources import bub_append
from tapeview.sources.bub import scan
from tapeview.sources.model import TapeBusy, TapeNotFound

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bub"
NOW = datetime(2026, 11, 23, 8, 0, 0, 123456, tzinfo=UTC)
STAMP = NOW.isoformat()
TODAY = date(2026, 11, 22)
FRESH = "Fresh start: prefers concise answers."
QUIET = {"now": NOW, "quiet_seconds": 0}


def sample(tmp_path: Path, name: str, *, age: float = 60.0) -> Path:
    path = tmp_path / name
    shutil.copyfile(FIXTURES / name, path)
    then = time.time() - age
    os.utime(path, (then, then))
    return path


@pytest.fixture
def hand(tmp_path: Path) -> Path:
    """The 0.5.1-format zone sample: its current zone is version 8, long-term text only."""
    return sample(tmp_path, "hand_memory_zone.jsonl")


def zones_of(path: Path):
    return read_zones(scan(path))


def new_lines(path: Path, before: bytes) -> list[dict]:
    return [json.loads(raw) for raw in path.read_bytes()[len(before) :].decode("utf-8").splitlines()]


def test_write_long_term_reads_back_as_the_new_highest_version(hand: Path) -> None:
    zone = write_long_term(hand, "Prefers tabs.\nUses uv.", 8, **QUIET)

    assert zone.version == 9
    assert current(zones_of(hand)) == zone
    assert zone.long_term == "Prefers tabs.\nUses uv."
    assert zone.daily == {}
    assert zone.updated_at == STAMP


def test_a_zone_is_written_in_the_agents_format_with_ids_continuing_the_tape(hand: Path) -> None:
    restore(hand, 5, 8, **QUIET)  # ids 47-52
    before = hand.read_bytes()

    add_daily(hand, "Reviewed the dashboard.", 9, day=date(2026, 11, 23), **QUIET)

    lines = new_lines(hand, before)
    meta, version = {"origin": "tapeview"}, {"version": 10}
    assert [list(obj) for obj in lines] == [["id", "kind", "payload", "meta", "date"]] * len(lines)
    assert [obj["id"] for obj in lines] == list(range(53, 60))
    assert [(obj["kind"], obj["payload"]["name"]) for obj in lines] == [
        ("anchor", "memory/open"),
        ("event", "memory.long_term"),
        ("event", "memory.daily"),
        ("event", "memory.daily"),
        ("event", "memory.daily"),
        ("event", "memory.daily"),
        ("anchor", "memory/seal"),
    ]
    assert lines[0]["payload"] == {"name": "memory/open", "state": version}
    assert lines[-1]["payload"] == {"name": "memory/seal", "state": version}
    assert [obj["payload"]["data"]["date"] for obj in lines[2:-1]] == [
        "2026-11-23",
        "2026-11-22",
        "2026-11-21",
        "2026-10-08",
    ]
    assert lines[2]["payload"]["data"] == {
        "date": "2026-11-23",
        "content": "# 2026-11-23\n\nReviewed the dashboard.",
        "updated_at": STAMP,
    }
    assert all(obj["meta"] == meta and obj["date"] == STAMP for obj in lines)
    assert hand.read_bytes().startswith(before)


def test_add_daily_appends_to_the_days_note_with_a_newline(hand: Path) -> None:
    restore(hand, 5, 8, **QUIET)

    zone = add_daily(hand, "Fixed the prune bug.", 9, day=date(2026, 11, 22), **QUIET)

    note = "# 2026-11-22\n\nRefactored tape store; fixed reset bug.\nFixed the prune bug."
    assert zone.daily["2026-11-22"] == note
    assert current(zones_of(hand)).daily["2026-11-22"] == note
    assert current(zones_of(hand)).long_term == "I prefer Python 3.12 and always want type hints."


def test_add_daily_defaults_to_the_day_of_the_write(hand: Path) -> None:
    zone = add_daily(hand, "First note.", 8, **QUIET)

    assert zone.daily == {"2026-11-23": "# 2026-11-23\n\nFirst note."}
    assert zone.long_term == FRESH


def test_an_empty_note_is_refused_and_nothing_is_written(hand: Path) -> None:
    before = hand.read_bytes()

    with pytest.raises(StoreError):
        add_daily(hand, "  \n", 8, day=TODAY, **QUIET)

    assert hand.read_bytes() == before


def test_prune_preview_equals_what_prune_removes(hand: Path) -> None:
    old = restore(hand, 5, 8, **QUIET)
    preview = prune_preview(old, 30, TODAY)

    zone = prune(hand, 30, 9, today=TODAY, **QUIET)

    assert preview == ["2026-10-08"]
    assert zone is not None and zone.version == 10
    assert [day for day in old.daily if day not in zone.daily] == preview
    assert current(zones_of(hand)) == zone
    assert zone.long_term == old.long_term


def test_prune_with_nothing_to_remove_writes_nothing_and_returns_none(hand: Path) -> None:
    restore(hand, 4, 8, **QUIET)
    before = hand.read_bytes()

    assert prune(hand, 30, 9, today=TODAY, **QUIET) is None
    assert hand.read_bytes() == before


def test_prune_preview_of_no_zone_is_empty() -> None:
    assert prune_preview(None, 30, TODAY) == []


def test_clear_writes_an_empty_zone(hand: Path) -> None:
    before = hand.read_bytes()

    zone = clear(hand, 8, **QUIET)

    assert zone.is_empty and zone.version == 9
    assert current(zones_of(hand)) == zone
    assert [obj["payload"]["name"] for obj in new_lines(hand, before)] == ["memory/open", "memory/seal"]


def test_restore_gives_back_the_exact_earlier_text_and_dailies(hand: Path) -> None:
    zones = zones_of(hand)
    old = next(z for z in zones if z.version == 5)

    zone = restore(hand, 5, 8, **QUIET)

    assert zone.version == 9
    assert (zone.long_term, zone.daily) == (old.long_term, old.daily)
    assert zone_text(current(zones_of(hand))) == zone_text(old)


def test_restore_of_a_version_that_never_was_is_refused(hand: Path) -> None:
    before = hand.read_bytes()

    with pytest.raises(StoreError):
        restore(hand, 42, 8, **QUIET)

    assert hand.read_bytes() == before


def test_a_stale_expected_version_raises_stale_edit_and_writes_nothing(hand: Path) -> None:
    before = hand.read_bytes()

    with pytest.raises(StaleEdit) as stale:
        write_long_term(hand, "my edit", 7, **QUIET)

    assert stale.value.current_version == "8"
    assert stale.value.current_text == FRESH
    assert hand.read_bytes() == before


def test_a_tape_without_a_zone_expects_none_and_starts_at_version_1(tmp_path: Path) -> None:
    tape = sample(tmp_path, "reset_after_archive.jsonl")

    with pytest.raises(StaleEdit) as stale:
        write_long_term(tape, "x", 3, **QUIET)
    zone = write_long_term(tape, "x", None, **QUIET)

    assert (stale.value.current_version, stale.value.current_text) == ("none", "")
    assert zone.version == 1
    assert current(zones_of(tape)) == zone


def test_a_busy_tape_gets_no_zone(tmp_path: Path) -> None:
    tape = sample(tmp_path, "session_realistic.jsonl")
    # The agent is mid-turn: its last entry is a tool call whose result has not come yet.
    call = {"id": 98, "kind": "tool_call", "payload": {"calls": []}, "meta": {}, "date": STAMP}
    with open(tape, "a") as f:
        f.write(json.dumps(call) + "\n")
    then = time.time() - 60
    os.utime(tape, (then, then))
    before = tape.read_bytes()

    with pytest.raises(TapeBusy):
        write_long_term(tape, "x", None, **QUIET)

    assert tape.read_bytes() == before


def test_a_missing_tape_is_not_found_and_not_created(tmp_path: Path) -> None:
    tape = tmp_path / "9d11f561157e98d3__0b871d5e50e7c192.jsonl"

    with pytest.raises(TapeNotFound):
        write_long_term(tape, "x", None, **QUIET)

    assert not tape.exists()


def test_a_write_landing_between_the_read_and_the_append_makes_it_busy(
    hand: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_append = bub_append.append
    agents_zone = b'{"id": 47, "kind": "anchor", "payload": {"name": "memory/open", "state": {"version": 9}}, "meta": {}}\n'

    def agent_writes_first(path, build, **kwargs):
        with open(path, "ab") as f:
            f.write(agents_zone)
        return real_append(path, build, **kwargs)

    monkeypatch.setattr(bub_zone_write, "append", agent_writes_first)
    before = hand.read_bytes()

    with pytest.raises(TapeBusy):
        write_long_term(hand, "x", 8, **QUIET)

    assert hand.read_bytes() == before + agents_zone


def test_the_legacy_no_date_format_is_kept_on_the_pr33_sample(tmp_path: Path) -> None:
    tape = sample(tmp_path, "memory_zone_pr33_unmerged.jsonl")
    before = tape.read_bytes()

    zone = write_long_term(tape, "Legacy edit.", 9, **QUIET)

    lines = new_lines(tape, before)
    assert [list(obj) for obj in lines] == [["id", "kind", "payload", "meta"]] * 3
    assert [obj["id"] for obj in lines] == [91, 92, 93]
    assert lines[1]["payload"]["data"] == {"content": "Legacy edit.", "updated_at": STAMP}
    assert zone.version == 10 and zone.date is None
    assert current(zones_of(tape)) == zone


def test_no_zone_is_written_onto_a_tape_whose_writer_crashed_mid_line(tmp_path: Path) -> None:
    # Crash residue is a turn that never ended (formats/bub.md §4): busy, or "looks stopped".
    tape = sample(tmp_path, "truncated_last_line_CRASH.jsonl")
    before = tape.read_bytes()

    with pytest.raises(TapeBusy):
        write_long_term(tape, "After the crash.", None, **QUIET)

    assert tape.read_bytes() == before


def test_the_sidecar_is_created_once_and_the_live_tape_is_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tape is mid-turn: that does not matter, because the zone does not go there.
    tape = sample(tmp_path, "session_realistic.jsonl")
    before = tape.read_bytes()
    sidecar = memory_sidecar(tape)
    flags: list[int] = []
    real_open = os.open

    def recording_open(path, flag, *args, **kwargs):
        if Path(path) == sidecar:  # not our lock file beside it
            flags.append(flag)
        return real_open(path, flag, *args, **kwargs)

    monkeypatch.setattr(bub_append.os, "open", recording_open)

    first = write_long_term(sidecar, "Kept beside the tape.", None, **QUIET)
    second = add_daily(sidecar, "Second edit.", 1, day=TODAY, **QUIET)

    assert sidecar.name == "session_realistic__sidecar__memory.jsonl"
    assert [bool(flag & os.O_CREAT) for flag in flags] == [True, False]
    assert [e.id for e in scan(sidecar)] == [1, 2, 3, 4, 5, 6, 7]
    assert (first.version, second.version) == (1, 2)
    assert current(zones_of(sidecar)) == second
    assert tape.read_bytes() == before


def test_where_zone_lives_prefers_a_sidecar_that_holds_a_zone(hand: Path) -> None:
    sidecar = memory_sidecar(hand)
    assert where_zone_lives(hand) == hand

    sidecar.touch()
    assert where_zone_lives(hand) == hand

    clear(sidecar, None, **QUIET)
    assert where_zone_lives(hand) == sidecar


def test_only_a_write_to_the_live_tape_cuts_the_agents_context(hand: Path) -> None:
    assert cuts_context(hand)
    assert not cuts_context(memory_sidecar(hand))


def test_current_zone_of_a_missing_sidecar_is_none(hand: Path) -> None:
    assert current_zone(memory_sidecar(hand)) is None
    assert current_zone(hand).version == 8


def test_zone_text_is_long_term_text_then_a_block_per_day(hand: Path) -> None:
    zone = next(z for z in zones_of(hand) if z.version == 4)

    assert zone_text(zone) == (
        "I prefer Python 3.12 and always want type hints.\n\n"
        "## 2026-11-22\n# 2026-11-22\n\nRefactored tape store; fixed reset bug.\n\n"
        "## 2026-11-21\n# 2026-11-21\n\nDesigned memory zone layout"
    )
    assert zone_text(None) == ""
