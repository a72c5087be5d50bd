"""The timeline read at speed, without a browser: turns, folds, jump by time, links to entries, the live end."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tapeview.tapes.models import Tape

from .agent import append_line

pytestmark = pytest.mark.django_db


@pytest.fixture
def realistic(served) -> Tape:
    """session_realistic: 97 entries, turns opened by user messages at 6, 19, 35, 52, 75 and 90."""
    return Tape.objects.get(name="session_realistic")


def timeline(client, tape: Tape, query: str = "", **headers) -> str:
    r = client.get(f"/tapes/{tape.key}/{query}", **headers)
    assert r.status_code == 200
    return r.content.decode()


class Within(HTMLParser):
    """The entries (`id="e<pos>"`) inside each element a test names, as the browser nests them."""

    VOID = {"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}

    def __init__(self, match) -> None:
        super().__init__()
        self.match, self.open, self.found = match, [], []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        entry = re.fullmatch(r"e(\d+)", a.get("id") or "")
        if entry and tag in ("article", "div"):
            for _, group in self.open:
                if group is not None:
                    self.found[group].append(int(entry[1]))
        if tag in self.VOID:
            return
        group = None
        if self.match(tag, a):
            self.found.append([])
            group = len(self.found) - 1
        self.open.append((tag, group))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID or tag not in (t for t, _ in self.open):
            return
        while self.open.pop()[0] != tag:
            pass


def within(html: str, match) -> list[list[int]]:
    parser = Within(match)
    parser.feed(html)
    return parser.found


def turn(html: str, label: str) -> list[int]:
    """The entries of the turn so labelled."""
    (found,) = within(html, lambda tag, a: a.get("role") == "group" and a.get("aria-label") == label)
    return found


def folds(html: str) -> list[list[int]]:
    return within(html, lambda tag, a: tag == "details" and a.get("class") == "fold")


def shown(html: str) -> list[int]:
    return [int(p) for p in re.findall(r'class="(?:entry|anchor) [^"]*" id="e(\d+)"', html)]


def message(entry_id: int, text: str, role: str = "assistant") -> str:
    line = {"id": entry_id, "kind": "message", "payload": {"role": role, "content": text}, "meta": {}}
    return json.dumps(line) + "\n"


def test_a_turn_holds_the_user_message_through_the_answer(viewer_client, realistic) -> None:
    html = timeline(viewer_client, realistic)
    # The answer at 13, then the loop's bookkeeping up to the next entry of another kind.
    assert turn(html, "Turn 1") == list(range(6, 18))
    assert re.search(
        r'<p class="turn-no">turn 1 <span class="sub turn-cost"[^>]*>\$0\.\d{4}</span></p>', html
    )
    assert turn(html, "Turn 2") == list(range(19, 29))


def test_operational_events_between_messages_are_folded(viewer_client, realistic) -> None:
    html = timeline(viewer_client, realistic)
    assert folds(html)[:4] == [[9, 10, 11], [14, 15, 16, 17], [22, 23, 24], [27, 28]]
    summaries = re.findall(r'<details class="fold"><summary>(\d+ operational events?)', html)
    assert summaries[:3] == ["3 operational events", "4 operational events", "3 operational events"]
    # What a person did (a command), errors, and events outside any turn stay cards of their own.
    folded = {pos for fold in folds(html) for pos in fold}
    assert {2, 3, 4, 21, 29, 30}.issubset(shown(html)) and not {2, 3, 4, 21, 29, 30} & folded


def test_a_page_that_starts_inside_a_turn_shows_it_continued(viewer_client, realistic) -> None:
    html = timeline(viewer_client, realistic, "?after=7")
    assert turn(html, "Turn 1 (continued)") == list(range(8, 18))
    assert turn(html, "Turn 2") == list(range(19, 29))


def test_narrowed_timelines_are_not_grouped(viewer_client, realistic) -> None:
    html = timeline(viewer_client, realistic, "?errors=1")
    assert shown(html) == [21, 96, 97]
    assert 'class="turn' not in html and 'class="fold"' not in html and "live-edge" not in html


def test_jump_by_time_opens_the_first_entry_at_or_after_it(viewer_client, realistic) -> None:
    html = timeline(viewer_client, realistic, "?time=2026-11-22T01:37:39")
    assert 'class="entry k-event n-loopstart target" id="e68"' in html
    opened = within(html, lambda tag, a: tag == "details" and a.get("class") == "fold" and "open" in a)
    assert opened == [[66, 67, 68, 69]]
    assert 'value="2026-11-22T01:37:39"' in html and 'name="at" min="1" value=""' in html


def test_a_time_after_the_tape_shows_its_end(viewer_client, realistic) -> None:
    html = timeline(viewer_client, realistic, "?time=2031-01-01T00:00")
    assert "No entry at or after" in html and "2031-01-01 00:00:00" in html
    assert shown(html)[-1] == 97


@pytest.mark.parametrize(
    "query",
    [
        "?time=yesterday",
        "?time=2026-13-45T99:00",
        "?time=" + "9" * 300,
        "?seen=-1",
        "?time=0001-01-01T00:00%2B05:00",
        "?time=9999-12-31T23:59-05:00",
    ],
)
def test_a_bad_time_is_ignored(viewer_client, realistic, query: str) -> None:
    html = timeline(viewer_client, realistic, query)
    assert shown(html)[:3] == [1, 2, 3] and "No entry at or after" not in html


def test_an_entry_position_wins_over_a_time(viewer_client, realistic) -> None:
    html = timeline(viewer_client, realistic, "?at=20&time=2026-11-22T01:37:39")
    assert 'id="e20"' in html and 'class="entry k-tool_call target" id="e20"' in html


def test_every_entry_links_to_its_place_and_the_link_opens_the_page_holding_it(
    viewer_client, realistic
) -> None:
    end = timeline(viewer_client, realistic, "?end=1")
    link = f'href="/tapes/{realistic.key}/?at=70#e70"'
    assert f'<a class="copy-link" {link}' in end
    assert len(re.findall(r'class="copy-link"', end)) == len(shown(end))
    html = timeline(viewer_client, realistic, "?at=20")
    assert 'class="entry k-tool_call target" id="e20"' in html and shown(html)[0] == 15


def test_a_jump_into_a_fold_opens_it(viewer_client, realistic) -> None:
    html = timeline(viewer_client, realistic, "?at=10")
    opened = within(html, lambda tag, a: tag == "details" and a.get("class") == "fold" and "open" in a)
    assert opened == [[9, 10, 11]]


def test_only_the_last_page_polls_for_new_entries(viewer_client, realistic) -> None:
    first = timeline(viewer_client, realistic)
    assert "live-edge" not in first and "live-badge" not in first
    end = timeline(viewer_client, realistic, "?end=1")
    # The poll says where the page starts (tapes.live: it takes entries up to a live page's worth).
    poll = f'hx-get="/tapes/{realistic.key}/tail?after=97&amp;first=48&amp;seen={realistic.size}" hx-trigger="every 1s"'
    assert poll in end and 'id="live-badge"' in end
    htmx = timeline(viewer_client, realistic, "?end=1", HTTP_HX_REQUEST="true")
    assert htmx.lstrip().startswith('<section id="entries"') and poll in htmx


def test_the_tail_answers_204_while_the_file_is_unchanged(viewer_client, realistic) -> None:
    r = viewer_client.get(f"/tapes/{realistic.key}/tail", {"after": 97, "seen": realistic.size})
    assert r.status_code == 204 and r.content == b""


def test_the_tail_brings_what_was_appended_and_the_next_poll(viewer_client, realistic, served) -> None:
    path = served["samples"] / "session_realistic.jsonl"
    append_line(path, message(98, "Fresh off the human", role="user"))
    r = viewer_client.get(f"/tapes/{realistic.key}/tail", {"after": 97, "first": 48, "seen": realistic.size})
    html = r.content.decode()
    assert r.status_code == 200 and "<html" not in html
    assert shown(html) == [98] and "Fresh off the human" in html and turn(html, "Turn 7") == [98]
    size = Path(path).stat().st_size
    assert f'hx-get="/tapes/{realistic.key}/tail?after=98&amp;first=48&amp;seen={size}"' in html

    append_line(path, message(99, "half an answer")[:30])
    html = viewer_client.get(f"/tapes/{realistic.key}/tail", {"after": 98, "seen": size}).content.decode()
    assert shown(html) == [99] and "unfinished last line" in html
    assert "tail?after=98&amp;" in html

    append_line(path, message(99, "half an answer")[30:])
    html = viewer_client.get(f"/tapes/{realistic.key}/tail", {"after": 98, "seen": size}).content.decode()
    # The answer closes the turn the poll before opened: drawn as that turn continued.
    assert turn(html, "Turn 7 (continued)") == [99] and "half an answer" in html


def test_the_tail_of_a_replaced_file_stops_following(viewer_client, realistic, served) -> None:
    path = served["samples"] / "session_realistic.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:10]))
    r = viewer_client.get(f"/tapes/{realistic.key}/tail", {"after": 97, "first": 48, "seen": realistic.size})
    html = r.content.decode()
    assert (
        r.status_code == 200
        and 'id="tape-replaced"' in html
        and "live-edge" not in html
        and shown(html) == []
    )
    # At the top too, where the reader looks: the live badge says it no longer follows.
    badge = re.search(
        r'<span class="live-badge stopped" id="live-badge" hx-swap-oob="true"[^>]*>(.*?)</span>', html
    )
    assert badge and "not following: the file was replaced" in badge.group(1)


@pytest.mark.parametrize("query", ["", "?after=x", "?after=-1", "?seen=10"])
def test_the_tail_without_a_position_is_a_bad_request(viewer_client, realistic, query: str) -> None:
    assert viewer_client.get(f"/tapes/{realistic.key}/tail{query}").status_code == 400


def test_the_tail_of_an_unknown_tape_is_404(viewer_client, served) -> None:
    assert viewer_client.get("/tapes/nosuchtape/tail?after=1").status_code == 404
