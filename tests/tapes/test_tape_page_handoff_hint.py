"""What a new user reads on a tape's page: the suggested handoff while the agent is mid-turn (the page
and the budget API alike), and counts of one in the header."""

from __future__ import annotations

import json

import pytest

from .test_budget import line, turns, write_tape

pytestmark = pytest.mark.django_db


def append(path, *lines: dict) -> None:
    with path.open("a") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))


def suggestion(page: str) -> str:
    return page.split('id="suggested-handoff">', 1)[1].split("</p>", 1)[0]


def test_mid_turn_the_suggestion_is_the_last_turns_end_and_says_the_handoff_waits(
    reader, served, settings, operator_client
) -> None:
    settings.TAPEVIEW_MODEL_WINDOWS = {"openai:gpt-4o": 20000}
    settings.TAPEVIEW_QUIET_SECONDS = 0  # the file just written is still: only its last entry counts
    lines = turns([1000, 2000])  # 11 entries: the second turn ends with loop.step ok at 11
    k = write_tape(served["samples"], "midturn", lines)
    path = served["samples"] / "midturn.jsonl"
    append(path, line(12, "message", {"role": "user", "content": "question 3"}))

    body = reader.get(f"/api/tapes/{k}/budget").json()
    assert body["suggested_handoff_pos"] == 11 and body["mid_turn"] is True
    page = operator_client.get(f"/tapes/{k}/").content.decode()
    assert 'after <a href="?at=11#e11">entry 11</a>, the last turn boundary' in suggestion(page)
    assert "The agent is mid-turn: a handoff can be written once its turn ends" in suggestion(page)
    handoff = operator_client.get(f"/tapes/{k}/handoff?at=11").content.decode()
    assert "Writing now would be refused: the agent is mid-turn (last entry: message user)" in handoff

    append(  # the turn ends: the end of the tape is the boundary again, with nothing to wait for
        path,
        line(13, "message", {"role": "assistant", "content": "answer 3"}),
        line(14, "event", {"name": "loop.step", "data": {"status": "ok"}}),
    )
    body = reader.get(f"/api/tapes/{k}/budget").json()
    assert body["suggested_handoff_pos"] == 14 and body["mid_turn"] is False
    page = operator_client.get(f"/tapes/{k}/").content.decode()
    assert "entry 14</a>" in suggestion(page) and "mid-turn" not in suggestion(page)


@pytest.mark.parametrize(("after", "says"), [(1, "1</a> entry since"), (2, "2</a> entries since")])
def test_the_header_counts_one_entry_since_the_last_anchor_as_one_entry(
    operator_client, served, after: int, says: str
) -> None:
    lines = turns([1000])
    lines.append(line(len(lines) + 1, "anchor", {"name": "phase/walkthrough", "state": {"summary": "s"}}))
    for n in range(after):
        lines.append(line(len(lines) + 1, "message", {"role": "user", "content": f"q{n}"}))
    k = write_tape(served["samples"], "handed", lines)
    page = operator_client.get(f"/tapes/{k}/").content.decode()
    since = page.split('id="count-since"', 1)[1].split("</span>", 1)[0]
    assert since.endswith(says)
