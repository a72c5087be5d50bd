"""One place (tapes.usage) decides which families record no token usage and how that is said: the
tape's header and its phase table say the same, for the real families and for one it is told of."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from tapeview.tapes import usage

from .operator_sources import serve, tape

pytestmark = pytest.mark.django_db


def tokens_row(page: str) -> str:
    row = re.search(r"<dt>Tokens</dt>(.*?)</div>", page, re.S).group(1)
    return " ".join(re.sub(r"<[^>]+>", " ", row).split())


def no_usage(page: str) -> str:
    found = re.search(r'<p class="sub" id="no-usage">(.*?)</p>', page, re.S)
    return html.unescape(" ".join(found.group(1).split())) if found else ""


@pytest.mark.parametrize(
    ("label", "source", "kind"),
    [
        ("记住：我最喜欢的颜色是蓝色，我每天早上七点起床。 · sess-zh-prefs-0001", "ya", "yachiyo"),
        ("01a200e4-e18d-7ffd-b1d0-f7592c930f76 (chat)", "ar", "araliya"),
    ],
)
def test_a_family_that_records_no_usage_says_so_alike_in_the_header_and_the_phase_table(
    viewer_client, settings, tmp_path: Path, label: str, source: str, kind: str
) -> None:
    serve(settings, tmp_path)
    page = viewer_client.get(f"/tapes/{tape(label, source).key}/").content.decode()
    assert tokens_row(page) == f"– not recorded by {kind}"
    assert no_usage(page) == f"Tokens unknown (–): {usage.UNRECORDED[kind]}."


def test_a_family_marked_as_recording_no_usage_reads_so_everywhere(
    viewer_client, settings, tmp_path: Path, monkeypatch
) -> None:
    """The header names no family itself: the table in tapes.usage is the one place that decides."""
    serve(settings, tmp_path)
    monkeypatch.setitem(usage.UNRECORDED, "bub", "bub records no token usage here")
    page = viewer_client.get(f"/tapes/{tape('hand_memory_zone', 'bub').key}/").content.decode()
    assert tokens_row(page) == "– not recorded by bub"
    assert no_usage(page) == "Tokens unknown (–): bub records no token usage here."
    assert 'title="bub records no token usage here"' in page
