"""The same entry of identical tapes (one tape copied into several folders) is one hit, its copies
named beside it with links; a tape that only begins alike keeps its own hit."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from tapeview.search import engine
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TAPE = FIXTURES / "bub" / "session_realistic.jsonl"


@pytest.fixture
def copies(settings, tmp_path: Path) -> dict[str, Tape]:
    """The same tape in folders a, b, c and d; in e with one more entry."""
    for label in "abcde":
        (tmp_path / label).mkdir()
        shutil.copy(TAPE, tmp_path / label / TAPE.name)
    line = {"id": 98, "kind": "message", "payload": {"role": "user", "content": "one more"}, "meta": {}}
    with (tmp_path / "e" / TAPE.name).open("a") as f:
        f.write(json.dumps(line) + "\n")
    settings.TAPEVIEW_SOURCES = ",".join(f"{label}=bub:{tmp_path / label}" for label in "abcde")
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return {t.source: t for t in Tape.objects.filter(name="session_realistic")}


def test_four_identical_tapes_give_one_hit_with_three_identical_copies(copies) -> None:
    hits = [h for h in engine.search('"what is in this repo"', kinds=["message"]) if h.pos == 6]
    [lead] = [h for h in hits if h.source != "e"]  # e is not a copy: it holds one more entry
    assert sorted([lead.source, *(t.source for t in lead.twins)]) == ["a", "b", "c", "d"]
    assert all(t.pos == 6 and t.kind == "message" for t in lead.twins)
    assert [h.twins for h in hits if h.source == "e"] == [()]


def test_the_search_page_says_and_3_identical_copies_with_their_links(viewer_client, copies) -> None:
    page = viewer_client.get(reverse("search:search"), {"q": '"what is in this repo"'}).content.decode()
    said = re.search(r'<p class="twins sub">and 3 identical copies [^:]*: (.*?)</p>', page)
    assert said, "no line about the identical copies"
    linked = re.findall(r'<a href="/tapes/(\w+)/\?at=6#e6">', said.group(1))
    others = {copies[s].key for s in "abcd"} - set(linked)
    assert len(linked) == 3 and len(others) == 1  # the hit's own tape, and the three copies beside it
    for key in linked:  # named there only, not a hit of their own
        assert page.count(f'href="/tapes/{key}/?at=6#e6"') == 1


def test_the_api_names_the_identical_tapes_of_a_hit(reader, copies) -> None:
    items = reader.get("/api/search", q='"what is in this repo"', kinds="message").json()["items"]
    at_six = {item["tape_id"]: sorted(item["identical"]) for item in items if item["pos"] == 6}
    assert at_six.pop(copies["e"].key) == []
    [(lead, identical)] = at_six.items()
    assert sorted([lead, *identical]) == sorted(copies[s].key for s in "abcd")
