"""The phase table tells same-named anchors apart by their place, and says which anchors it leaves out
(a memory zone's) and why, so that its rows and the tape's anchor count add up."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from tapeview.tapes.models import Tape

from .operator_sources import serve, tape
from .test_budget import line, write_tape

pytestmark = pytest.mark.django_db


def phase_names(page: str) -> list[str]:
    """Each row's first cell as a reader reads it: the anchor's place and name, its entry count."""
    table = re.search(r'<table class="phase-table">(.*?)</table>', page, re.S).group(1)
    cells = re.findall(r'<td class="phase-name">(.*?)</td>', table, re.S)
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split()) for c in cells]


def not_phases(page: str) -> list[str]:
    found = re.findall(r'<p class="sub not-phases"[^>]*>(.*?)</p>', page, re.S)
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", p)).split()) for p in found]


def test_same_named_anchors_show_their_places_linked_to_their_entries(
    viewer_client, settings, tmp_path: Path
) -> None:
    folder = tmp_path / "bub"
    folder.mkdir()
    settings.TAPEVIEW_SOURCES = f"bub=bub:{folder}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    lines = [line(1, "anchor", {"name": "session/start", "state": {}})]
    for n in range(2, 11):
        if n in (4, 8):
            lines.append(line(n, "anchor", {"name": "handoff", "state": {"summary": f"at {n}"}}))
        else:
            lines.append(line(n, "message", {"role": "user", "content": f"question {n}"}))
    key = write_tape(folder, "twice", lines)
    page = viewer_client.get(f"/tapes/{key}/").content.decode()
    assert phase_names(page) == [
        "#1 session/start 2 context",
        "#4 handoff 3 context",
        "#8 handoff 2 context",
    ]
    assert f'<a class="anchor-pos" href="/tapes/{key}/entries/8/"' in page


def test_a_memory_zone_tape_says_which_anchors_are_not_phases_and_why(
    viewer_client, settings, tmp_path: Path
) -> None:
    serve(settings, tmp_path)
    zone = tape("hand_memory_zone", "bub")
    page = viewer_client.get(f"/tapes/{zone.key}/").content.decode()
    assert [name.split(" ")[1] for name in phase_names(page)] == ["session/start", "phase-1"]
    assert not_phases(page) == [
        "Not phases: 8 memory/open and 8 memory/seal anchors: each marks a version of the memory zone, "
        "written with every memory change, not a phase of the work. All anchors"
    ]
    assert Tape.objects.get(pk=zone.pk).anchors == 2 + 8 + 8  # what the header counts adds up


def test_a_tape_whose_anchors_are_all_phases_says_nothing_left_out(viewer_client, settings, tmp_path) -> None:
    serve(settings, tmp_path)
    page = viewer_client.get(f"/tapes/{tape('session_realistic', 'bub').key}/").content.decode()
    assert not_phases(page) == []
