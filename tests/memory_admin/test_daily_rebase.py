"""Appending to a daily note from a page opened before another write: an append that only adds after
lines nobody changed goes through on top of the newer zone; one whose day's note was changed
meanwhile (rewritten, cleared, restored away) is a conflict, with the diff, and writes nothing."""

from __future__ import annotations

import html
import os
import re
import shutil
import threading
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from memory_admin.stores import bub_zone
from memory_admin.stores.bub_zone_write import add_daily, copy_zone, restore, write_long_term
from memory_admin.stores.model import StaleEdit
from tests.conftest import FIXTURES

NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)
DAY = date(2026, 11, 23)
QUIET = {"now": NOW, "quiet_seconds": 0}


@pytest.fixture
def hand(tmp_path: Path) -> Path:
    """The 0.5.1-format zone sample, long idle: its current zone is version 8, with no notes."""
    path = tmp_path / "hand_memory_zone.jsonl"
    shutil.copyfile(FIXTURES / "bub" / "hand_memory_zone.jsonl", path)
    os.utime(path, (0, 0))
    return path


def note_of(path: Path, day: date = DAY) -> str | None:
    return bub_zone.current_zone(path).daily.get(day.isoformat())


# The writer itself (memory_admin/stores/bub_zone_write.py)


def test_an_append_on_an_older_version_goes_after_the_lines_appended_since(hand: Path) -> None:
    add_daily(hand, "The agent's line.", 8, day=DAY, **QUIET)  # v9, after the page was opened at v8

    zone = add_daily(hand, "My line.", 8, day=DAY, **QUIET)

    assert zone.version == 10
    assert note_of(hand) == "# 2026-11-23\n\nThe agent's line.\nMy line."


def test_an_append_goes_through_when_only_other_parts_changed(hand: Path) -> None:
    add_daily(hand, "Mine first.", 8, day=DAY, **QUIET)  # v9
    write_long_term(hand, "The agent's new long-term text.", 9, **QUIET)  # v10
    add_daily(hand, "An older day's note.", 10, day=date(2026, 11, 1), **QUIET)  # v11

    zone = add_daily(hand, "Mine again.", 9, day=DAY, **QUIET)

    assert zone.version == 12 and zone.long_term == "The agent's new long-term text."
    assert zone.daily == {
        "2026-11-23": "# 2026-11-23\n\nMine first.\nMine again.",
        "2026-11-01": "# 2026-11-01\n\nAn older day's note.",
    }


@pytest.mark.parametrize(
    "meanwhile",
    [
        pytest.param(lambda path: restore(path, 8, 9, **QUIET), id="the note restored away"),
        pytest.param(
            lambda path: _rewrite_note(path, "# 2026-11-23\n\nFirst line, edited."), id="a line edited"
        ),
        pytest.param(lambda path: _rewrite_note(path, "# 2026-11-23\n\nFirst"), id="a line cut short"),
    ],
)
def test_an_append_whose_days_note_changed_meanwhile_is_stale_and_writes_nothing(
    hand: Path, meanwhile
) -> None:
    add_daily(hand, "First line", 8, day=DAY, **QUIET)  # v9: the page is opened here
    meanwhile(hand)  # v10
    before = hand.read_bytes()

    with pytest.raises(StaleEdit) as stale:
        add_daily(hand, "My line.", 9, day=DAY, **QUIET)

    assert stale.value.current_version == "10"
    assert hand.read_bytes() == before


def test_an_append_on_a_version_the_file_no_longer_holds_is_stale(hand: Path) -> None:
    before = hand.read_bytes()

    with pytest.raises(StaleEdit):
        add_daily(hand, "My line.", 42, day=DAY, **QUIET)

    assert hand.read_bytes() == before


def test_the_same_note_sent_twice_from_one_version_is_written_once(hand: Path) -> None:
    first = add_daily(hand, "Call Bob.", 8, day=DAY, **QUIET)
    with pytest.raises(StaleEdit):  # a Save clicked twice: the second is told, not written again
        add_daily(hand, "Call Bob.", 8, day=DAY, **QUIET)
    assert bub_zone.current_zone(hand).version == first.version
    assert note_of(hand).count("Call Bob.") == 1


def test_appends_made_at_once_on_one_version_all_land_in_turn(hand: Path) -> None:
    writers = 6
    start = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        start.wait()
        try:
            add_daily(hand, f"line {n}", 8, day=DAY, **QUIET)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors, errors
    zone = bub_zone.current_zone(hand)
    assert zone.version == 8 + writers
    assert sorted(zone.daily[DAY.isoformat()].split("\n")[2:]) == [f"line {n}" for n in range(writers)]


def _rewrite_note(path: Path, note: str) -> None:
    """Another writer replaces the day's note by a zone of its own (as the agent's own edit would)."""
    zone = bub_zone.current_zone(path)
    copy_zone(replace(zone, daily={DAY.isoformat(): note}), path, zone.version, **QUIET)


# The store page


def zone_store() -> MemoryStore:
    return MemoryStore.objects.get(kind="bub.zone")


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def notes_on(page: str) -> dict[str, str]:
    found = re.findall(r'<article class="daily"><h3>([^<]+)</h3><pre class="text">(.*?)</pre>', page, re.S)
    return {day: html.unescape(note) for day, note in found}


@pytest.mark.django_db
def test_appending_from_a_page_opened_before_another_tabs_append_saves_both(
    operator_client, memory_sources
) -> None:
    key = zone_store().key
    operator_client.post(
        f"/memory/{key}/zone", {"action": "daily", "text": "Tab two's note.", "base_version": "8"}
    )

    r = operator_client.post(
        f"/memory/{key}/zone", {"action": "daily", "text": "Late note.", "base_version": "8"}, follow=True
    )

    page = r.content.decode()
    assert r.status_code == 200 and "Added to today&#x27;s note: saved as version 10." in page
    assert notes_on(page)[today()] == f"# {today()}\n\nTab two's note.\nLate note."
    assert '<code id="version">10</code>' in page


@pytest.mark.django_db
def test_appending_after_the_long_term_text_changed_keeps_that_text(operator_client, memory_sources) -> None:
    key = zone_store().key
    operator_client.post(
        f"/memory/{key}/zone", {"action": "long_term", "text": "Tab two.", "base_version": "8"}
    )

    r = operator_client.post(
        f"/memory/{key}/zone", {"action": "daily", "text": "Late note.", "base_version": "8"}
    )

    assert r.status_code == 302
    page = operator_client.get(f"/memory/{key}/").content.decode()
    assert re.search(r'<pre class="text" id="long-term">Tab two.</pre>', page)
    assert notes_on(page)[today()] == f"# {today()}\n\nLate note."


@pytest.mark.django_db
def test_appending_to_a_note_cleared_meanwhile_is_a_conflict_with_the_diff(
    operator_client, memory_sources
) -> None:
    store = zone_store()
    operator_client.post(
        f"/memory/{store.key}/zone", {"action": "daily", "text": "First.", "base_version": "8"}
    )
    operator_client.post(
        f"/memory/{store.key}/zone", {"action": "clear", "base_version": "9", "confirmed": "on"}
    )
    before = Path(store.path).read_bytes()

    r = operator_client.post(
        f"/memory/{store.key}/zone", {"action": "daily", "text": "Second.", "base_version": "9"}
    )

    page = r.content.decode()
    assert r.status_code == 409 and Path(store.path).read_bytes() == before
    assert "What changed since the version you started from" in page
    assert re.search(r'<tr class="del">(?:(?!</tr>).)*First\.', page, re.S)
    assert "Make my change again on top of version 10" in page


@pytest.mark.django_db
def test_a_rebased_append_that_fails_after_writing_is_logged_as_written_with_its_version(
    operator_client, memory_sources, monkeypatch
) -> None:
    """The version a rebased append writes is known only under the file's lock: the audit log's row
    names it, so a writer that fails once its lines are in the file is still recorded as written."""
    from memory_admin.stores import bub_zone_write

    key = zone_store().key
    operator_client.post(
        f"/memory/{key}/zone", {"action": "daily", "text": "Tab two's note.", "base_version": "8"}
    )
    real = bub_zone_write.append

    def append_then_fail(*args, **kwargs):
        real(*args, **kwargs)
        raise RuntimeError("the connection dropped")

    monkeypatch.setattr(bub_zone_write, "append", append_then_fail)
    with pytest.raises(RuntimeError):
        operator_client.post(
            f"/memory/{key}/zone", {"action": "daily", "text": "Late note.", "base_version": "8"}
        )
    monkeypatch.undo()

    page = operator_client.get(f"/memory/{key}/").content.decode()
    audit = page.split('<section id="audit">', 1)[1]
    row = re.search(r"<tr>(?:(?!</tr>).)*zone\.daily(?:(?!</tr>).)*</tr>", audit, re.S).group(0)
    assert "outcome-written" in row and "<code>10</code>" in row, row
    on_disk = bub_zone.current_zone(Path(zone_store().path))
    assert (on_disk.version, on_disk.daily[today()]) == (10, f"# {today()}\n\nTab two's note.\nLate note.")
