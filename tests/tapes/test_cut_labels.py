"""A label that yachiyo's title rule cut shows that it was cut; a title that is whole shows as it is."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tapeview.sources import yachiyo
from tapeview.sources.model import Entry
from tapeview.tapes import discovery

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def labels(page: str) -> list[str]:
    return re.findall(r'<td class="label"><a [^>]*>([^<]*)</a>', page)


def test_the_session_index_marks_the_titles_yachiyo_cut(viewer_client, settings, tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "yachiyo" / "data", tmp_path / "data")
    settings.TAPEVIEW_SOURCES = f"ya=yachiyo:{tmp_path / 'data'}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    shown = labels(viewer_client.get("/?sort=label").content.decode())
    assert "Please remember these project facts (bat… · sess-project-facts" in shown
    assert "Remember that my password hint is &quot;blue … · sess-low-permission" in shown
    assert "记住：我最喜欢的颜色是蓝色，我每天早上七点起床。 · sess-zh-prefs-0001" in shown  # whole: no mark


def user(text: str) -> Entry:
    return Entry(1, 0, 0, None, "message", name="user", payload={"role": "user", "content": text})


@pytest.mark.parametrize(
    ("message", "label"),
    [
        ("  short and whole  ", "short and whole"),
        ("x" * 40, "x" * 40),
        ("x" * 41, "x" * 40 + "…"),
        # 40 UTF-16 units, as yachiyo counts: an emoji is two of them, so 20 emoji fill the title.
        ("😀" * 20, "😀" * 20),
        ("😀" * 21, "😀" * 20 + "…"),
        ("x" + "😀" * 20, "x" + "😀" * 19 + "…"),  # the pair the cut would split is left out
    ],
)
def test_an_unlisted_sessions_label_is_the_title_rule_with_a_mark_where_it_cut(message, label) -> None:
    assert yachiyo.session_label("s1", user(message)) == label


@pytest.mark.parametrize(
    ("message", "label"),
    [
        ("Hi! Can you summarise how your memory works?", "Hi! Can you summarise how your memory works?"),
        ("x" * 61, "x" * 60 + "…"),
        ("  Deploy the gateway\nthen run the tests  ", "Deploy the gateway…"),
        ("y" * 60, "y" * 60),
    ],
)
def test_an_araliya_label_shows_where_its_first_turn_was_cut(message: str, label: str) -> None:
    from tapeview.sources import araliya

    assert araliya.session_label("chat", user(message)) == label
