"""Two operators handing off from the same view: the second is told the tape moved, and nothing of
theirs is written after the first's; a service says where it looked with `after`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tapeview.sources import bub
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def idle(settings):
    settings.TAPEVIEW_QUIET_SECONDS = 0


def the_tape() -> Tape:
    return Tape.objects.get(label="telegram:-1001234567890")


def last_id(path: Path) -> int:
    return json.loads(path.read_text().splitlines()[-1])["id"]


def drawn_after(page: str) -> str:
    return re.search(r'name="after" value="(\d+)"', page).group(1)


def test_the_second_of_two_tabs_gets_a_conflict_and_nothing_is_written(operator_client, served, idle) -> None:
    tape = the_tape()
    path = Path(tape.path)
    url = f"/tapes/{tape.key}/handoff"
    tab_a = drawn_after(operator_client.get(url).content.decode())
    tab_b = drawn_after(operator_client.get(url).content.decode())
    assert tab_a == tab_b == str(last_id(path))

    first = operator_client.post(url, {"name": "phase/tab-a", "after": tab_a})
    assert first.status_code == 302
    after_first = path.read_bytes()
    second = operator_client.post(url, {"name": "phase/tab-b", "summary": "mine", "after": tab_b})
    page = second.content.decode()
    assert second.status_code == 409
    assert "The tape changed since you looked at it: 2 entries were written after id" in page
    assert path.read_bytes() == after_first
    # The form keeps what was typed, and now stands after what is there: sent again, it is written.
    assert 'value="phase/tab-b"' in page and drawn_after(page) == str(last_id(path))
    again = operator_client.post(url, {"name": "phase/tab-b", "after": drawn_after(page)})
    assert again.status_code == 302
    assert [e.name for e in bub.scan(path) if e.kind == "anchor"][-2:] == ["phase/tab-a", "phase/tab-b"]


def test_the_api_writes_after_the_entry_named_and_answers_409_with_the_last_id_otherwise(
    writer, served, idle
) -> None:
    tape = the_tape()
    path = Path(tape.path)
    seen = last_id(path)
    url = f"/api/tapes/{tape.key}/handoff"
    assert writer.post(url, {"name": "phase/one", "after": seen}).status_code == 201
    before = path.read_bytes()
    stale = writer.post(url, {"name": "phase/two", "after": seen})
    assert stale.status_code == 409
    assert stale.json()["last_id"] == seen + 2 and "Nothing was written" in stale.json()["detail"]
    assert path.read_bytes() == before
    assert writer.post(url, {"name": "phase/two", "after": seen + 2}).status_code == 201
    assert writer.post(url, {"name": "phase/three"}).status_code == 201  # without `after`, as before


def test_a_tape_the_agent_just_wrote_is_busy_not_stale_and_the_form_stands_after_its_last_entry(
    operator_client, writer, served, settings
) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 3600
    tape = the_tape()
    path = Path(tape.path)
    os.utime(path)  # the agent wrote just now: the tape is settling for the quiet period
    seen = last_id(path)
    assert drawn_after(operator_client.get(f"/tapes/{tape.key}/handoff").content.decode()) == str(seen)
    busy = writer.post(f"/api/tapes/{tape.key}/handoff", {"name": "phase/x", "after": seen})
    assert busy.status_code == 409 and busy.json()["retry_after"] >= 1 and "last_id" not in busy.json()
