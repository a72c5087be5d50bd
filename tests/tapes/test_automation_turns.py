"""A nanobot cron or trigger turn is drawn as what it is: its row on its own, labelled automation,
and its run after it, in no turn of the user's; the user's turns are numbered without them
(nanobot's own rule: is_hidden_history_message rows are not chat turns, formats/nanobot.md §2.3)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tapeview.demodata import nanobot as nanobot_demo
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .test_checkpoint_turns import turns

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 24, 17, 0, tzinfo=UTC)
KEY = "cli:direct"


def _at(minute: int) -> str:
    return f"2026-11-24T09:{minute:02d}:00"


CALL = {"id": "call_1", "type": "function", "function": {"name": "exec", "arguments": '{"command": "df -h"}'}}
ROWS = [  # pos 2 onwards (the metadata record is line 1)
    {"role": "user", "content": "Are last night's backups fine?", "timestamp": _at(1)},
    {"role": "assistant", "content": "Yes, all three finished.", "timestamp": _at(2)},
    {
        "role": "user",
        "content": "Nightly disk report",
        "timestamp": _at(3),
        "_automation_turn": {"kind": "cron"},
    },
    {"role": "assistant", "content": "", "tool_calls": [CALL], "timestamp": _at(4)},
    {"role": "tool", "tool_call_id": "call_1", "name": "exec", "content": "/vault 91%", "timestamp": _at(5)},
    {"role": "assistant", "content": "The vault is at 91 %.", "timestamp": _at(6)},
    {"role": "user", "content": "Prune the old snapshots then", "timestamp": _at(7)},
    {"role": "assistant", "content": "Pruned to 7.", "timestamp": _at(8)},
    {"role": "user", "content": "Heartbeat check", "timestamp": _at(9), "_cron_turn": True},
    {"role": "assistant", "content": "All quiet.", "timestamp": _at(10)},
]
AUTOMATION = (4, 10)  # the cron rows' positions


@pytest.fixture
def session(settings, tmp_path: Path) -> Tape:
    root = tmp_path / "nanobot"
    nanobot_demo.write(root, NOW)
    path = next(p for p in root.glob("sessions/*/*.jsonl") if p.stem == "Y2xpOmRpcmVjdA")  # cli:direct
    metadata = {"_type": "metadata", "key": KEY, "created_at": _at(0), "updated_at": _at(10), "metadata": {}}
    metadata |= {"last_archived": 0, "last_consolidated": 0}
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [metadata, *ROWS]))
    settings.TAPEVIEW_SOURCES = f"nb=nanobot:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return Tape.objects.get(source="nb", label=KEY)


def cards_in_no_turn(html: str) -> list[int]:
    boxed = {pos for box in turns(html).values() for pos in box}
    drawn = [int(p) for p in re.findall(r'<article class="[^"]*" id="e(\d+)"', html)]
    return [pos for pos in drawn if pos not in boxed]


def test_the_users_turns_are_numbered_without_the_cron_turns(viewer_client, session) -> None:
    html = viewer_client.get(f"/tapes/{session.key}/").content.decode()
    assert turns(html) == {"Turn 1": [2, 3], "Turn 2": [8, 9]}
    assert '<p class="turn-no">turn 3</p>' not in html
    assert cards_in_no_turn(html) == [1, 4, 5, 6, 7, 10, 11]


def test_a_cron_row_is_labelled_automation(viewer_client, session) -> None:
    html = viewer_client.get(f"/tapes/{session.key}/").content.decode()
    for pos in AUTOMATION:
        header = re.search(rf'id="e{pos}">\s*<header>.*?</header>', html, re.S)[0]
        assert ">automation</span>" in header, f"#{pos} says what it is"


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        (2, {"Turn 1 (continued)": [3], "Turn 2": [8, 9]}),  # mid turn 1
        (4, {"Turn 2": [8, 9]}),  # in the cron run: it is no turn 1 continued
        (9, {}),  # after the last turn of the user's: the second cron run
    ],
    ids=["in-a-turn", "in-a-cron-run", "after-the-last-turn"],
)
def test_a_page_that_starts_later_counts_the_turns_before_it_alike(
    viewer_client, session, after: int, expected: dict
) -> None:
    html = viewer_client.get(f"/tapes/{session.key}/", {"after": after}).content.decode()
    assert turns(html) == expected
