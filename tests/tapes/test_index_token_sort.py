"""The session index's Tokens column: a tape's total and nanobot's last-turn figure are not one
measure, so the page says which a figure is and the token sort keeps the totals together."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from tests.tapes.operator_sources import serve

pytestmark = pytest.mark.django_db

ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
LABEL = re.compile(r'<td class="label"><a href="/tapes/\w+/"[^>]*>([^<]+)</a>')
SOURCE = re.compile(r'<td class="source"[^>]*>([^<]+)<')
TOKENS = re.compile(r'<td class="num tokens"([^>]*)>(.*?)</td>', re.S)
TITLE = re.compile(r'title="([^"]*)"')


def rows(client: Client, sort: str) -> list[tuple[str, str, str]]:
    """Each row's session (source/label), its Tokens cell as read, and that cell's title."""
    page = client.get("/", {"sort": sort}).content.decode()
    out = []
    for row in ROW.findall(page):
        label, source, tokens = LABEL.search(row), SOURCE.search(row), TOKENS.search(row)
        if not label:
            continue
        title = TITLE.search(tokens.group(1))
        text = " ".join(re.sub(r"<[^>]+>", " ", tokens.group(2)).split())
        session = f"{source.group(1).strip()}/{html.unescape(label.group(1))}"
        out.append((session, html.unescape(text), html.unescape(title.group(1)) if title else ""))
    return out


def figure(text: str) -> int:
    return int(text.split()[0].replace(",", ""))


@pytest.fixture
def families(settings, tmp_path) -> None:
    serve(settings, tmp_path)


def test_a_nanobot_sessions_figure_is_labelled_as_its_last_turn(viewer_client, families) -> None:
    shown = {session: (text, title) for session, text, title in rows(viewer_client, "-tokens")}
    assert shown["nb/cli:direct"][0] == "35,148 last turn"
    assert "last turn" in shown["nb/cli:direct"][1]
    assert shown["bub/session_realistic"] == ("38,856", "")  # a total: nothing to say
    head = re.search(r'<th class="c-tokens"[^>]*>', viewer_client.get("/").content.decode()).group(0)
    assert "(nanobot: last turn) sorts after the totals" in html.unescape(TITLE.search(head).group(1))


TOTALS = [  # Bub tapes: every run's usage added up, largest first
    "bub/session_realistic",
    "bub/truncated_last_line_CRASH",
    "bub/legacy_v0.2.3_session_timestamp",
    "bub/memory_zone_pr33_unmerged",
    "bub/reset_after_archive",
    "bub/fork_merged",
]
LAST_TURNS = ["nb/cli:direct", "nb/discord:1187654321098765432", "nb/telegram:8123456789"]


@pytest.mark.parametrize("sort", ["-tokens", "tokens"])
def test_the_token_sort_puts_the_totals_first_then_the_last_turns_then_the_tapes_without(
    viewer_client, families, sort: str
) -> None:
    listed = rows(viewer_client, sort)
    with_figure = [session for session, text, _ in listed if text != "–"]
    largest_first = sort.startswith("-")
    # session_realistic and its truncated copy hold the same total: they stay in label order.
    totals = TOTALS if largest_first else [*reversed(TOTALS[2:]), *TOTALS[:2]]
    assert with_figure == totals + (LAST_TURNS if largest_first else LAST_TURNS[::-1])
    assert [text for _, text, _ in listed[len(with_figure) :]] == ["–"] * (len(listed) - len(with_figure))
    figures = [figure(text) for _, text, _ in listed[: len(with_figure)]]
    for part in (figures[: len(totals)], figures[len(totals) :]):
        assert part == sorted(part, reverse=largest_first)
