"""What a user reads on a tape's page: a family that records no usage says so in the header, the
suggested handoff's button waits while the agent is mid-turn (on the page and as its live end
follows), and a tape that was empty gets its pagers with its first entries."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .operator_sources import serve, tape
from .test_budget import line, turns, write_tape
from .test_tape_page_handoff_hint import append

pytestmark = pytest.mark.django_db


def tokens_row(page: str) -> str:
    row = re.search(r"<dt>Tokens</dt>(.*?)</div>", page, re.S).group(1)
    return " ".join(re.sub(r"<[^>]+>", " ", row).split())


@pytest.mark.parametrize(
    ("label", "source", "reads"),
    [
        (
            "记住：我最喜欢的颜色是蓝色，我每天早上七点起床。 · sess-zh-prefs-0001",
            "ya",
            "– not recorded by yachiyo",
        ),
        ("01a200e4-e18d-7ffd-b1d0-f7592c930f76 (chat)", "ar", "– not recorded by araliya"),
        # Families that record usage read as before, with or without it in this tape.
        ("session_realistic", "bub", "38,856 last prompt 4,332, cache hit 35%"),
        ("hand_memory_zone", "bub", "– last prompt –, cache hit –"),
        ("telegram:8123456789", "nb", "30,494 last turn only · last prompt 30,457, cache hit 80%"),
        ("dream:20261118-211144", "nb", "– last prompt –, cache hit –"),
    ],
)
def test_the_header_says_in_words_a_family_records_no_usage(
    viewer_client, settings, tmp_path: Path, label: str, source: str, reads: str
) -> None:
    serve(settings, tmp_path)
    page = viewer_client.get(f"/tapes/{tape(label, source).key}/").content.decode()
    assert tokens_row(page) == reads


def button(html: str) -> str:
    return re.search(r"<(?:a|button) [^>]*>Hand off with that preview…", html).group(0)


def tail(client, k: str, after: int, **more) -> str:
    answer = client.get(f"/tapes/{k}/tail", {"after": after, **more}, headers={"HX-Request": "true"})
    assert answer.status_code == 200
    return answer.content.decode()


USER = ("message", {"role": "user", "content": "question 3"})
ENDS = [  # what ends a turn (formats/bub.md §4): Bub 0.3's step, 0.2's step finish and result
    [("event", {"name": "loop.step", "data": {"status": "ok"}})],
    [("event", {"name": "loop.step.finish", "data": {"step": 1, "followup": False}})],
    [("event", {"name": "loop.result", "data": {"steps": 1, "error": None}})],
]


@pytest.mark.parametrize("prompts", [[1000, 2000], [None, None]], ids=["reported", "estimated"])
@pytest.mark.parametrize("ends", ENDS, ids=["loop.step", "loop.step.finish", "loop.result"])
def test_mid_turn_the_handoff_button_waits_for_the_turns_end_on_the_page_and_as_it_follows(
    operator_client, served, settings, prompts: list, ends: list
) -> None:
    settings.TAPEVIEW_MODEL_WINDOWS = {"openai:gpt-4o": 20000}
    settings.TAPEVIEW_QUIET_SECONDS = 0
    k = write_tape(served["samples"], "midturn", turns(prompts))  # 11 entries, between turns
    path = served["samples"] / "midturn.jsonl"
    page = operator_client.get(f"/tapes/{k}/").content.decode()
    assert button(page).startswith("<a ") and "disabled" not in button(page)

    append(path, line(12, *USER))  # a turn starts: the box is sent again, the button waits
    live = tail(operator_client, k, 11)
    assert 'id="budget"' in live and "disabled" in button(live)
    assert 'aria-describedby="handoff-mid-turn"' in button(live) and "href" not in button(live)
    assert f'<a href="/tapes/{k}/handoff?at=11">with your confirmation</a>' in live
    page = operator_client.get(f"/tapes/{k}/").content.decode()
    assert "disabled" in button(page) and "The agent is mid-turn" in page

    append(path, line(13, "message", {"role": "assistant", "content": "answer 3"}))
    append(path, *(line(14 + i, kind, payload) for i, (kind, payload) in enumerate(ends)))
    live = tail(operator_client, k, 12)  # the turn ends: the button leads to the handoff again
    assert 'id="budget"' in live and "disabled" not in button(live)
    assert f'href="/tapes/{k}/handoff?at=14"' in button(live) and "mid-turn" not in live


def test_a_viewer_is_told_an_operator_may_confirm_and_gets_no_button(viewer_client, served, settings) -> None:
    settings.TAPEVIEW_MODEL_WINDOWS = {"openai:gpt-4o": 20000}
    settings.TAPEVIEW_QUIET_SECONDS = 0
    k = write_tape(served["samples"], "midturn", [*turns([1000, 2000]), line(12, *USER)])
    page = viewer_client.get(f"/tapes/{k}/").content.decode()
    assert "with an operator's confirmation" in page and "Hand off with that preview…" not in page


def test_a_tape_without_entries_gets_its_pagers_with_the_first_entries(viewer_client, served) -> None:
    k = write_tape(served["samples"], "empty", [])
    page = viewer_client.get(f"/tapes/{k}/").content.decode()
    assert "This tape has no entries yet." in page and "end of tape" not in page
    edge = re.search(r'class="live-edge" hx-get="([^"]+)"', page).group(1).replace("&amp;", "&")
    assert edge.endswith("&empty=1")

    append(served["samples"] / "empty.jsonl", *turns([1000])[:3])
    live = viewer_client.get(edge, headers={"HX-Request": "true"}).content.decode()
    pager = re.search(
        r'<nav class="pager" hx-swap-oob="outerHTML:#entries nav.pager\[hidden\]">.*?</nav>', live, re.S
    )
    assert pager and "#1 – " in pager.group(0) and "#3" in pager.group(0) and "end of tape" in pager.group(0)
    assert 'hx-swap-oob="delete:#entries #no-entries"' in live
    assert "empty=1" not in live  # the next poll finds the pagers in place
