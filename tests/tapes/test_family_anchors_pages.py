"""What the timeline's pages show of a nanobot summary checkpoint, now an anchor of its tape: the
anchors-only timeline, the activity strip, the budget's estimate and the phase table; and that
a Bub tape's anchors show as before."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tapeview.demodata import nanobot as nanobot_demo
from tapeview.tapes import discovery
from tapeview.tapes.models import Anchor, Tape

from .operator_sources import serve
from .test_family_anchors import records, summary_tape

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 24, 17, 0, tzinfo=UTC)


@pytest.fixture
def demo(settings, tmp_path: Path) -> Path:
    root = tmp_path / "nanobot"
    nanobot_demo.write(root, NOW)
    settings.TAPEVIEW_SOURCES = f"nb=nanobot:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return root


def shown(html: str) -> list[int]:
    """The positions of the entries a timeline page shows."""
    return [int(p) for p in re.findall(r'<(?:article|div) class="[^"]*" id="e(\d+)"', html)]


def strip_words(html: str) -> str:
    return re.search(r"where anchors, errors and tool calls fall along [^<]*", html)[0]


def test_the_anchors_link_of_a_nanobot_session_lists_its_checkpoint(viewer_client, demo) -> None:
    tape, marker = summary_tape()
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert re.search(rf'href="/tapes/{tape.key}/\?anchors=1" id="count-anchors"[^>]*>1<', page)
    only = viewer_client.get(f"/tapes/{tape.key}/", {"anchors": 1}).content.decode()
    assert shown(only) == [marker]
    # Paged from either end, it is still the one anchor.
    assert shown(viewer_client.get(f"/tapes/{tape.key}/", {"anchors": 1, "end": 1}).content.decode()) == [
        marker
    ]
    after = viewer_client.get(f"/tapes/{tape.key}/", {"anchors": 1, "after": marker}).content.decode()
    assert shown(after) == []


def test_the_anchors_timeline_lists_the_archive_pointers_row(viewer_client, settings, tmp_path) -> None:
    """An older writer's session: the row the archive pointer names is its anchor."""
    serve(settings, tmp_path)
    tape = Tape.objects.get(label="discord:1187654321098765432", source="old")
    held = list(Anchor.objects.filter(tape=tape).values_list("name", "pos"))
    assert [name for name, _ in held] == ["nanobot/archived"]
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert f'href="/tapes/{tape.key}/?anchors=1"' in page
    only = viewer_client.get(f"/tapes/{tape.key}/", {"anchors": 1}).content.decode()
    assert shown(only) == [pos for _, pos in held]
    assert ": 1 anchor," in strip_words(page)


def test_the_strip_counts_a_nanobot_checkpoint_as_an_anchor(viewer_client, demo) -> None:
    tape, marker = summary_tape()
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert ": 1 anchor," in strip_words(page)
    mark = re.search(
        r'<a href="\?at=(\d+)#e\d+" class="pic-mark" data-what="anchor"[^>]*><title>([^<]*)<', page
    )
    assert mark and int(mark[1]) == marker
    assert mark[2] == f"1 anchor nanobot/summary at #{marker}"


def test_a_nanobot_session_without_a_checkpoint_has_no_anchor_marks(viewer_client, demo) -> None:
    tape = next(
        t for t in Tape.objects.filter(source="nb", kind="nanobot") if not t.anchors and t.entries > 3
    )
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert ": 0 anchors," in strip_words(page)
    assert "no summary checkpoint yet" in page and "nanobot has no anchors" not in page


def test_the_budget_estimate_counts_the_checkpoint_that_starts_the_context(viewer_client, demo) -> None:
    """Saved by the compaction itself, nothing reported since: the context is the summary alone."""
    tape, marker = summary_tape()
    rows = records(tape)[:marker]
    Path(tape.path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    source = re.search(r'id="budget-source">([^<]*)<', page)[1]
    assert source.startswith("estimated with")
    tokens = int(re.search(r'id="budget-tokens">([\d,]+)<', page)[1].replace(",", ""))
    assert tokens > 0  # the summary nanobot will send


def test_a_bub_tapes_anchors_timeline_and_strip_are_unchanged(viewer_client, served) -> None:
    tape = max(Tape.objects.filter(kind="bub", role="tape"), key=lambda t: t.anchors)
    assert tape.anchors > 1
    anchors = list(Anchor.objects.filter(tape=tape).values_list("pos", flat=True))
    only = viewer_client.get(f"/tapes/{tape.key}/", {"anchors": 1}).content.decode()
    assert shown(only) == anchors[:50]
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert f": {tape.anchors:,} anchor" in strip_words(page)
