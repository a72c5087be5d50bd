"""The header's "Hand off…" agrees with the agent's turn, on the page and as its live end follows:
mid-turn it waits (disabled, with the reason and the stopped agent's way through), as the budget's
button does, whether or not the model's window is known."""

from __future__ import annotations

import re

import pytest

from .test_budget import line, turns, write_tape
from .test_tape_page_handoff_hint import append
from .test_tape_page_words import USER, tail

pytestmark = pytest.mark.django_db


def header_action(html: str) -> str:
    return re.search(
        r'<span class="handoff-action" id="handoff-action"[^>]*>.*?</span>(?:</span>)?', html, re.S
    ).group(0)


@pytest.mark.parametrize("window", [{"openai:gpt-4o": 20000}, {}], ids=["window known", "window unknown"])
def test_the_header_hand_off_waits_mid_turn_on_the_page_and_as_it_follows(
    operator_client, served, settings, window: dict
) -> None:
    settings.TAPEVIEW_MODEL_WINDOWS = window
    settings.TAPEVIEW_QUIET_SECONDS = 0
    k = write_tape(served["samples"], "midturn", turns([1000, 2000]))  # 11 entries, between turns
    path = served["samples"] / "midturn.jsonl"
    action = header_action(operator_client.get(f"/tapes/{k}/").content.decode())
    assert f'<a class="button secondary" id="handoff-link" href="/tapes/{k}/handoff">Hand off…</a>' in action

    append(path, line(12, *USER))  # a turn starts: the header's action is sent again, and waits
    action = header_action(tail(operator_client, k, 11))
    assert 'hx-swap-oob="true"' in action
    assert '<button type="button" class="secondary" id="handoff-link" disabled' in action
    assert "The agent is mid-turn: a handoff can be written once its turn ends" in action
    assert f'<a href="/tapes/{k}/handoff">with your confirmation</a>' in action
    action = header_action(operator_client.get(f"/tapes/{k}/").content.decode())
    assert "disabled" in action and "The agent is mid-turn" in action

    append(path, line(13, "message", {"role": "assistant", "content": "answer 3"}))
    append(path, line(14, "event", {"name": "loop.step", "data": {"status": "ok"}}))
    action = header_action(tail(operator_client, k, 12))  # the turn ends: the link is back
    assert f'<a class="button secondary" id="handoff-link" href="/tapes/{k}/handoff">Hand off…</a>' in action
    assert "mid-turn" not in action


def test_a_viewer_gets_no_header_hand_off_from_the_live_end(viewer_client, served, settings) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 0
    k = write_tape(served["samples"], "midturn", turns([1000]))
    append(served["samples"] / "midturn.jsonl", line(7, *USER))
    assert 'id="handoff-action"' not in tail(viewer_client, k, 6)
