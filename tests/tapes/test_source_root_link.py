"""A source root that is a link: read, and named on the Sources page; swapped while running: a problem."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from django.utils.html import escape

from tapeview.sources import parse_sources

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def row(page: str, label: str) -> str:
    return re.search(rf"<tr[^>]*>\s*<td><a [^>]*>{label}</a>.*?</tr>", page, re.S).group(0)


@pytest.fixture
def linked(settings, tmp_path: Path) -> dict[str, Path]:
    """`/srv/agent -> /data/agent-2026` as a deploy makes it, beside a source given as a plain folder."""
    target = tmp_path / "data" / "agent-2026"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", target)
    (tmp_path / "srv").mkdir()
    link = tmp_path / "srv" / "agent"
    os.symlink(target, link)
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(FIXTURES / "bub" / "fork_merged.jsonl", plain)
    settings.TAPEVIEW_SOURCES = f"agent=bub:{link},plain=bub:{plain}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    return {"link": link, "target": target, "plain": plain, "other": tmp_path / "data" / "agent-2027"}


def swap(link: Path, to: Path) -> None:
    """Points the link at another folder in one rename, as `ln -sfn` does."""
    os.symlink(to, link.with_name("swap"))
    os.replace(link.with_name("swap"), link)


def test_a_root_given_as_a_link_is_read_and_the_sources_page_says_where_it_leads(
    viewer_client, linked
) -> None:
    agent = row(viewer_client.get("/sources/").content.decode(), "agent")
    assert escape(f"{linked['link']} is a link to {linked['target']}") in agent
    assert (
        f"<code>{escape(linked['link'])}</code>" in agent
    )  # the path as configured, not only where it leads
    assert 'class="ok"' in agent  # a link is a common deployment, not a problem
    assert "9d11f561157e98d3" in viewer_client.get("/?source=agent").content.decode()


def test_a_root_that_is_no_link_gets_no_notice(viewer_client, linked) -> None:
    plain = row(viewer_client.get("/sources/").content.decode(), "plain")
    assert "is a link to" not in plain and 'class="ok"' in plain


def test_the_api_says_which_roots_are_links_without_naming_folders(reader, linked) -> None:
    body = reader.get("/api/sources").json()
    items = {s["label"]: s for s in body["items"]}
    assert (items["agent"]["root_is_link"], items["agent"]["root_swapped"]) == (True, False)
    assert (items["plain"]["root_is_link"], items["plain"]["root_swapped"]) == (False, False)
    assert items["agent"]["ok"] and items["agent"]["tapes"] > 0
    text = json.dumps(body)
    assert str(linked["target"]) not in text and str(linked["link"]) not in text


def test_a_root_link_swapped_while_running_is_a_problem_and_the_first_folder_is_still_read(
    viewer_client, reader, linked
) -> None:
    viewer_client.get("/sources/")  # read once: the link led to agent-2026
    linked["other"].mkdir()
    shutil.copy(FIXTURES / "bub" / "session_realistic.jsonl", linked["other"])
    swap(linked["link"], linked["other"])

    agent = row(viewer_client.get("/sources/").content.decode(), "agent")
    assert 'class="trouble"' in agent
    assert escape(f"{linked['link']} now leads to {linked['other']}, not to {linked['target']}") in agent
    assert escape(f"still read from {linked['target']} until Tapeview restarts") in agent
    sessions = viewer_client.get("/?source=agent").content.decode()
    assert "9d11f561157e98d3" in sessions and "session_realistic" not in sessions
    (item,) = [s for s in reader.get("/api/sources").json()["items"] if s["label"] == "agent"]
    assert (item["root_is_link"], item["root_swapped"], item["ok"]) == (True, True, False)


def test_a_root_that_is_a_link_loop_is_named_and_the_pages_still_answer(
    viewer_client, settings, tmp_path: Path
) -> None:
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    settings.TAPEVIEW_SOURCES = f"loop=bub:{tmp_path / 'a'}"
    response = viewer_client.get("/sources/")
    assert response.status_code == 200
    loop = row(response.content.decode(), "loop")
    assert 'class="trouble"' in loop and escape(f"{tmp_path / 'a'} is a link that loops") in loop
    assert viewer_client.get("/").status_code == 200


def test_a_source_written_back_out_keeps_the_link_it_was_given(tmp_path: Path) -> None:
    # `tapeview serve PATH` hands its sources to the pages as text: the link must survive the trip.
    (tmp_path / "data").mkdir()
    os.symlink(tmp_path / "data", tmp_path / "agent")
    (spec,) = parse_sources([f"agent=bub:{tmp_path / 'agent'}"])
    assert str(spec) == f"agent=bub:{tmp_path / 'agent'}" and spec.path == tmp_path / "data"
