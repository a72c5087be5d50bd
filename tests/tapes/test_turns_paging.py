"""The turns pages and API are paged: a page holds at most a page of turns, and a turn too long for
one page goes on on the next; the conversation shows each turn's words, tool calls and review."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tapeview.reviews.models import Review
from tapeview.tapes import discovery, turn_tree
from tapeview.tapes.models import Tape

from .turn_sources import FIXTURES, index_families

pytestmark = pytest.mark.django_db

STAMP = "2026-11-22T01:37:{:02d}.000000+00:00"


def bub_turns(path: Path, turns: int, tools: int = 0, said: str = "question {n}") -> None:
    """A Bub 0.5.1 tape of `turns` turns, each a user's message, `tools` tool calls and an answer."""
    lines: list[dict] = []

    def add(kind: str, payload: dict) -> None:
        lines.append(
            {
                "id": len(lines) + 1,
                "kind": kind,
                "payload": payload,
                "meta": {},
                "date": STAMP.format(len(lines) % 60),
            }
        )

    for n in range(1, turns + 1):
        add("event", {"name": "loop.start", "data": {"model": "openai:gpt-4o-mini"}})
        add("message", {"role": "user", "content": said.format(n=n)})
        for t in range(tools):
            add(
                "tool_call",
                {
                    "calls": [
                        {
                            "id": f"c{n}.{t}",
                            "type": "function",
                            "function": {"name": "bash", "arguments": "{}"},
                        }
                    ]
                },
            )
            add("tool_result", {"results": [f"ran {t}"]})
        add("message", {"role": "assistant", "content": f"answer {n}"})
        add(
            "event",
            {
                "name": "run",
                "data": {
                    "status": "ok",
                    "model": "openai:gpt-4o-mini",
                    "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
                },
            },
        )
        add("event", {"name": "loop.step", "data": {"status": "ok"}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture
def long_tape(settings, tmp_path: Path) -> Tape:
    root = tmp_path / "tapes"
    root.mkdir()
    bub_turns(root / "long.jsonl", 45)
    settings.TAPEVIEW_SOURCES = f"long=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return Tape.objects.get(name="long")


def numbers(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<span class="kind">turn (\d+)', html)]


def test_the_turns_page_shows_a_page_of_turns_and_links_the_next(long_tape, viewer_client) -> None:
    url = f"/tapes/{long_tape.key}/turns/"
    seen, pages = [], 0
    while url:
        html = viewer_client.get(url).content.decode()
        found = numbers(html)
        assert 0 < len(found) <= turn_tree.PAGE_TURNS
        seen += found
        pages += 1
        more = re.search(r'<a class="next-turns" href="(\?cursor=[A-Za-z0-9_-]+)">', html)
        url = f"/tapes/{long_tape.key}/turns/{more.group(1)}" if more else ""
    assert seen == list(range(1, 46)) and pages == 3


def test_the_api_pages_turns_by_cursor(long_tape, reader) -> None:
    first = reader.get(f"/api/tapes/{long_tape.key}/turns", limit=10).json()
    assert [t["number"] for t in first["items"]] == list(range(1, 11))
    second = reader.get(f"/api/tapes/{long_tape.key}/turns", limit=10, cursor=first["next_cursor"]).json()
    assert [t["number"] for t in second["items"]] == list(range(11, 21))
    assert second["items"][0]["first_pos"] == first["items"][-1]["last_pos"] + 1
    assert reader.get(f"/api/tapes/{long_tape.key}/turns", limit=101).status_code == 422


def test_a_deep_link_on_a_later_page_reloads_to_the_same_node(long_tape, viewer_client) -> None:
    html = viewer_client.get(f"/tapes/{long_tape.key}/turns/").content.decode()
    cursor = re.search(r'href="\?cursor=([A-Za-z0-9_-]+)"', html).group(1)
    later = viewer_client.get(f"/tapes/{long_tape.key}/turns/?cursor={cursor}").content.decode()
    node = re.search(r'data-node="(m\d+)"', later).group(1)
    url = f"/tapes/{long_tape.key}/turns/?cursor={cursor}&node={node}"
    for _ in range(2):  # a reload is the same page
        html = viewer_client.get(url).content.decode()
        assert re.search(rf'id="node-{node}"[^>]*aria-current="true"', html)
        assert "answer 21" in html[html.index('id="node-detail"') :]


def test_a_turn_too_long_for_a_page_goes_on_on_the_next(
    settings, tmp_path, viewer_client, reader, monkeypatch
) -> None:
    root = tmp_path / "tapes"
    root.mkdir()
    bub_turns(root / "wide.jsonl", 2, tools=6)  # 17 entries a turn
    settings.TAPEVIEW_SOURCES = f"wide=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    tape = Tape.objects.get(name="wide")
    monkeypatch.setattr(turn_tree, "ENTRY_CAP", 10)
    first = reader.get(f"/api/tapes/{tape.key}/turns").json()
    assert [(t["number"], t["continued"], t["complete"]) for t in first["items"]] == [(1, False, False)]
    html = viewer_client.get(f"/tapes/{tape.key}/turns/").content.decode()
    assert "goes on on the next page" in html
    rest = reader.get(f"/api/tapes/{tape.key}/turns", cursor=first["next_cursor"]).json()
    assert rest["items"][0]["number"] == 1 and rest["items"][0]["continued"]
    tools = sum(t["tool_calls"] for t in [*first["items"], rest["items"][0]])
    assert tools == 6  # every call of the turn, on one page or the other


def test_the_agents_text_is_escaped_on_both_pages(settings, tmp_path, viewer_client) -> None:
    root = tmp_path / "tapes"
    root.mkdir()
    bub_turns(
        root / "hostile.jsonl", 1, tools=1, said="<script>alert(1)</script> <img src=x onerror=alert(2)>"
    )
    settings.TAPEVIEW_SOURCES = f"h=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    tape = Tape.objects.get(name="hostile")
    for path in ("turns/?node=t1", "turns/?node=m6", "conversation/"):
        html = viewer_client.get(f"/tapes/{tape.key}/{path}").content.decode()
        assert "<script>alert(1)" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.fixture
def families(settings, tmp_path: Path) -> dict[str, Path]:
    return index_families(settings, tmp_path)


def test_the_conversation_shows_words_folded_tools_and_figures(families, viewer_client) -> None:
    tape = Tape.objects.get(source="bub", name="session_realistic")
    lines = [
        json.loads(line) for line in (FIXTURES / "bub" / "session_realistic.jsonl").read_text().splitlines()
    ]
    calls = sum(len(line["payload"]["calls"]) for line in lines if line["kind"] == "tool_call")
    html = viewer_client.get(f"/tapes/{tape.key}/conversation/").content.decode()
    assert html.count('<details class="tool-fold') == calls
    assert html.count('class="bubble user"') == sum(
        1 for line in lines if line["kind"] == "message" and line["payload"]["role"] == "user"
    )
    first = html[html.index('id="turn-1"') : html.index('id="turn-16"')]
    assert "what is in this repo?" in first
    assert "The repo has README.md, AGENTS.md and src/parser.py" in first
    # Its run names gpt-4o-mini, which the shipped price table prices.
    assert "4,356 tokens" in first and re.search(r"cost \$0\.\d{4}", first)
    assert "review turn" not in html  # a viewer reads, and does not review


def test_the_conversation_renders_markdown_of_araliya_safely(families, viewer_client) -> None:
    tape = Tape.objects.get(source="araliya", name="01a200e4-e18d-7ffd-b1d0-f7592c930f76")
    html = viewer_client.get(f"/tapes/{tape.key}/conversation/").content.decode()
    assert "Hi! Can you summarise how your memory works?" in html
    assert "<h2>Memory overview</h2>" in html and "<table>" in html
    assert "tokens not recorded" in html


def test_an_operator_reviews_a_turn_from_the_conversation(families, operator_client) -> None:
    tape = Tape.objects.get(source="bub", name="session_realistic")
    html = operator_client.get(f"/tapes/{tape.key}/conversation/").content.decode()
    form = html[html.index('id="r16"') :]
    assert 'name="span" value="turn"' in form and 'name="end" value="28"' in form
    answer = operator_client.post(
        f"/tapes/{tape.key}/entries/16/reviews/new",
        {
            "score": "4",
            "verdict": "fail",
            "labels": "wrong-tool",
            "span": "turn",
            "end": "28",
            "back": "conversation",
        },
    )
    assert answer.status_code == 302 and answer["Location"] == f"/tapes/{tape.key}/conversation/#turn-16"
    review = Review.objects.get(tape_key=tape.key)
    assert (review.span, review.pos, review.end, review.score) == ("turn", 16, 28, 4)
    html = operator_client.get(answer["Location"]).content.decode()
    box = html[html.index('id="r16"') : html.index('id="r16"') + 2000]
    assert "★4" in box and "fail" in box and "(turn)" in box
