"""A tape whose last line has no newline (a crash cut it, or the agent is writing it) says so in the
session index and the API as its timeline does; the line is counted neither as an entry nor as
unreadable, and once its newline comes it is an entry like any other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tapeview.tapes import discovery

from .operator_sources import serve, tape

pytestmark = pytest.mark.django_db

CRASH = "truncated_last_line_CRASH"


@pytest.fixture
def sources(settings, tmp_path: Path) -> dict[str, Path]:
    return serve(settings, tmp_path)


def complete_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def test_the_api_says_the_last_line_is_unfinished_and_counts_it_as_no_entry(reader, sources) -> None:
    path = sources["bub"] / f"{CRASH}.jsonl"
    assert not path.read_bytes().endswith(b"\n")
    t = tape(CRASH, "bub")
    body = reader.get(f"/api/tapes/{t.key}").json()
    assert body["unfinished_last_line"] is True
    assert (body["entries"], body["unreadable"]) == (complete_lines(path), 0)
    listed = {i["id"]: i for i in reader.get("/api/tapes", limit=500).json()["items"]}
    assert listed[t.key]["unfinished_last_line"] is True
    assert [i["label"] for i in listed.values() if i["unfinished_last_line"]] == [CRASH]


def test_the_session_index_and_the_tape_page_mark_it_as_the_timeline_does(viewer_client, sources) -> None:
    t = tape(CRASH, "bub")
    end = f"/tapes/{t.key}/?end=1"
    timeline = viewer_client.get(end).content.decode()
    assert "unfinished last line" in timeline
    index = viewer_client.get("/", {"q": CRASH}).content.decode()
    row = next(r for r in index.split("<tr>") if f"/tapes/{t.key}/" in r)
    assert f'href="{end}#e{t.next_pos}">+ unfinished last line</a>' in row
    everything = viewer_client.get("/", {"sort": "label"}).content.decode()
    assert everything.count("+ unfinished last line</a>") == 1  # this tape's row alone
    page = viewer_client.get(f"/tapes/{t.key}/").content.decode()
    entries = re.search(r"<dt>Entries</dt>(.*?)</div>", page, re.S).group(1)
    assert 'id="unfinished-last-line"' in entries and f'href="{end}#e{t.next_pos}"' in entries
    assert f'id="e{t.next_pos}"' in timeline  # where the marks lead: the unfinished line itself


def test_once_its_newline_comes_the_line_is_an_entry_and_the_mark_goes(
    viewer_client, reader, sources
) -> None:
    path = sources["bub"] / f"{CRASH}.jsonl"
    lines = complete_lines(path)
    t = tape(CRASH, "bub")
    with path.open("ab") as f:
        f.write(b"\n")
    discovery.sync()
    body = reader.get(f"/api/tapes/{t.key}").json()
    assert body["unfinished_last_line"] is False
    assert body["entries"] + body["unreadable"] == lines + 1  # the cut line, now complete, is read
    assert "unfinished last line" not in viewer_client.get(f"/tapes/{t.key}/").content.decode()


def test_a_tape_that_ends_well_is_not_marked(reader, sources) -> None:
    body = reader.get(f"/api/tapes/{tape('session_realistic', 'bub').key}").json()
    assert body["unfinished_last_line"] is False
