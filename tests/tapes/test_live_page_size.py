"""A live page keeps to a bounded size: it follows the agent's appends until it holds LIVE_PAGE_SIZE
entries, then says how many newer entries there are and links to the next page (which follows on),
and its pagers say so too: their range is always the entries the page shows."""

from __future__ import annotations

import re

import pytest

from tapeview.tapes.live import LIVE_PAGE_SIZE as FULL

from .test_budget import line, write_tape
from .test_tape_page_handoff_hint import append

pytestmark = pytest.mark.django_db


def message(n: int) -> dict:
    return line(n, "message", {"role": "user", "content": f"message {n}"})


def cards(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<article [^>]*id="e(\d+)"', html)]


def edge(html: str) -> str:
    return re.search(r'class="live-edge" hx-get="([^"]+)"', html).group(1).replace("&amp;", "&")


def pagers(html: str) -> list[str]:
    found = re.findall(r'<nav class="pager"[^>]*>.*?</nav>', html, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", p).split()) for p in found]


def poll(client, url: str) -> str:
    answer = client.get(url, headers={"HX-Request": "true"})
    assert answer.status_code == 200
    return answer.content.decode()


def test_a_live_page_with_room_takes_entries_up_to_a_page_then_counts_the_newer_ones(
    viewer_client, served
) -> None:
    assert FULL == 100
    k = write_tape(served["samples"], "filling", [message(n) for n in range(1, 46)])
    path = served["samples"] / "filling.jsonl"
    page = viewer_client.get(f"/tapes/{k}/?end=1").content.decode()
    assert cards(page) == list(range(1, 46))
    assert pagers(page) == ["start of tape #1 – #45 end of tape"] * 2

    append(path, *(message(n) for n in range(46, 96)))  # the reader at the end watches them arrive
    live = poll(viewer_client, edge(page))
    assert cards(live) == list(range(46, 96)) and "newer-entries" not in live
    assert '<span hx-swap-oob="innerHTML:#entries .pager-last">#95</span>' in live

    append(path, *(message(n) for n in range(96, 106)))  # ten more: five fit
    page, live = live, poll(viewer_client, edge(live))
    assert cards(live) == list(range(96, 101))
    assert 45 + len(cards(page) + cards(live)) == FULL
    newer = re.search(r'<p class="newer-entries" id="newer-entries">(.*?)</p>', live, re.S).group(1)
    assert f'<a href="/tapes/{k}/?after=100">5 newer entries →</a>' in newer
    assert pagers(live) == ["start of tape #1 – #100 newer → end ⇥"]  # sent to both pagers, out of band
    assert 'hx-swap-oob="outerHTML:#entries nav.pager"' in live

    append(path, message(106))  # the full page counts on, and takes no entry
    live = poll(viewer_client, edge(live))
    assert cards(live) == []
    assert "6 newer entries →" in live and pagers(live) == ["start of tape #1 – #100 newer → end ⇥"]

    nxt = viewer_client.get(f"/tapes/{k}/?after=100").content.decode()  # the link: the next page, live
    assert cards(nxt) == list(range(101, 107)) and 'id="live-badge"' in nxt
    assert pagers(nxt) == ["⇤ start ← older #101 – #106 end of tape"] * 2


def test_the_end_page_follows_a_page_of_appends_then_says_how_many_are_newer(viewer_client, served) -> None:
    k = write_tape(served["samples"], "full", [message(n) for n in range(1, 61)])
    page = viewer_client.get(f"/tapes/{k}/?end=1").content.decode()
    assert cards(page) == list(range(11, 61))
    assert "first=11" in edge(page)

    append(served["samples"] / "full.jsonl", *(message(n) for n in range(61, 112)))
    live = poll(viewer_client, edge(page))
    assert cards(live) == list(range(61, 111))  # up to #110: the page holds #11 – #110
    assert f'<a href="/tapes/{k}/?after=110">1 newer entry →</a>' in live
    assert pagers(live) == ["⇤ start ← older #11 – #110 newer → end ⇥"]
