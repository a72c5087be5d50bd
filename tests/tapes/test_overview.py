"""The session index's bars over time and its figures, from the index's rows of fixture tapes."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape
from tapeview.tapes.overview import BARS

from .test_compare import anchor, calls, results, run, said

pytestmark = pytest.mark.django_db


def write_dated(path: Path, entries: list[dict], dates: list[str]) -> None:
    pairs = enumerate(zip(entries, dates, strict=True), 1)
    lines = [json.dumps({"id": i, **e, "meta": {}, "date": d}) for i, (e, d) in pairs]
    path.write_text("".join(line + "\n" for line in lines))


# Three sessions: two whose last activity is on 20 November (one of them started the day before),
# one on 23 November; nothing on the 21st and 22nd.
SESSIONS = {
    "monday": (
        [anchor("session/start", {}), said("user", "hi"), calls("ls"), results(True), run(100)],
        ["2026-11-19T23:00:00+00:00", "2026-11-19T23:30:00+00:00", "2026-11-20T00:10:00+00:00",
         "2026-11-20T00:20:00+00:00", "2026-11-20T01:00:00+00:00"],
    ),
    "monday-late": (
        [said("user", "again"), said("assistant", "sure"), run(50)],
        ["2026-11-20T21:00:00+00:00", "2026-11-20T21:00:30+00:00", "2026-11-20T21:01:00+00:00"],
    ),
    "thursday": (
        [said("user", "and now"), calls("bash"), results(True), results(True)],
        ["2026-11-23T08:00:00+00:00", "2026-11-23T08:01:00+00:00", "2026-11-23T08:02:00+00:00",
         "2026-11-23T08:04:00+00:00"],
    ),
}  # fmt: skip


@pytest.fixture
def dated(settings, tmp_path: Path) -> dict[str, Tape]:
    root = tmp_path / "tapes"
    root.mkdir()
    for name, (entries, dates) in SESSIONS.items():
        write_dated(root / f"{name}.jsonl", entries, dates)
    settings.TAPEVIEW_SOURCES = f"runs=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    settings.TAPEVIEW_REFRESH_SECONDS = 3600  # indexed: the pages need not look at the folder again
    Tape.objects.filter(name="monday").update(cost=0.25)
    Tape.objects.filter(name="thursday").update(cost=1.5)
    return {t.name: t for t in Tape.objects.all()}


def bars_of(text: str, measure: str) -> list[tuple[str | None, str]]:
    """Each bar of a chart: its link (None: a bar with no session) and its title."""
    svg = re.search(rf'<svg class="pic pic-timebars pic-{measure}-bars".*?</svg>', text, re.S).group(0)
    found = []
    for m in re.finditer(r'<a href="([^"]*)"[^>]*><title>([^<]*)</title>|<g><title>([^<]*)</title>', svg):
        found.append(
            (html.unescape(m.group(1)), html.unescape(m.group(2))) if m.group(1) else (None, m.group(3))
        )
    return found


def test_the_bars_count_each_day_of_the_sessions_last_activity(dated, viewer_client) -> None:
    text = viewer_client.get("/").content.decode()
    assert [title for _, title in bars_of(text, "entries")] == [
        "20 Nov 2026: 8 entries in 2 sessions",
        "21 Nov 2026: 0 entries in 0 sessions",
        "22 Nov 2026: 0 entries in 0 sessions",
        "23 Nov 2026: 4 entries in 1 session",
    ]
    assert [title for _, title in bars_of(text, "errors")][::3] == [
        "20 Nov 2026: 1 error in 2 sessions",
        "23 Nov 2026: 2 errors in 1 session",
    ]
    assert bars_of(text, "tokens")[0][1] == "20 Nov 2026: 150 tokens in 2 sessions"
    assert bars_of(text, "cost")[3][1] == "23 Nov 2026: $1.50 in 1 session"
    assert [link for link, _ in bars_of(text, "entries")][1:3] == [None, None]  # empty days link nowhere


def test_clicking_a_bar_lists_the_sessions_of_its_day(dated, viewer_client) -> None:
    text = viewer_client.get("/", {"kind": "bub"}).content.decode()
    link, _ = bars_of(text, "entries")[0]
    assert "since=2026-11-20T00%3A00" in link and "until=2026-11-21T00%3A00" in link
    assert "kind=bub" in link  # the other filters stay
    narrowed = viewer_client.get(link).content.decode()
    assert '<small id="tally">2 of 3 tapes</small>' in narrowed
    assert ">monday<" in narrowed and ">monday-late<" in narrowed and ">thursday<" not in narrowed
    # Narrowed to one day, the bars go by the hour: 21 of them, from 01:00 to 21:00.
    hours = bars_of(narrowed, "entries")
    assert len(hours) == 21
    assert hours[0][1] == "20 Nov 01:00 UTC: 5 entries in 1 session"
    assert hours[-1][1] == "20 Nov 21:00 UTC: 3 entries in 1 session"
    assert 'id="all-times"' in narrowed


def test_the_figures_sum_the_sessions_listed(dated, viewer_client) -> None:
    text = viewer_client.get("/").content.decode()
    assert re.search(r'id="stat-sessions">3<', text)
    # 3 errors in 12 entries; two sessions have errors.
    assert '<dd id="stat-error-rate">25.0% of entries <span class="sub">2 sessions with errors</span>' in text
    assert '<dd id="stat-cost">$1.75 <span class="sub">of 2 sessions</span>' in text
    # Lengths 2 h, 1 min and 4 min: the middle one is 4 min, the 99th percentile the longest.
    assert '<dd id="stat-session-length">p50 4 min 0 s · p99 2 h 0 min</dd>' in text


def test_the_figures_follow_the_filters(dated, viewer_client) -> None:
    text = viewer_client.get("/", {"errors": "1"}).content.decode()
    assert re.search(r'id="stat-sessions">2<', text)
    assert [title for _, title in bars_of(text, "entries")][0] == "20 Nov 2026: 5 entries in 1 session"


def test_a_bad_time_in_the_query_is_ignored_not_an_error(dated, viewer_client) -> None:
    page = viewer_client.get("/", {"since": "yesterday"})
    assert page.status_code == 200
    assert '<small id="tally">3 of 3 tapes</small>' in page.content.decode()


def test_dates_of_the_year_1_and_9999_draw_the_last_years_only(dated, viewer_client) -> None:
    """A file's odd dates stretch the range over millennia: the bars go by the year, at most BARS of
    them, ending at the newest session's year, never one bar per month of 10,000 years."""
    Tape.objects.filter(name="monday").update(last_at=datetime(1, 1, 1, tzinfo=UTC))
    Tape.objects.filter(name="thursday").update(last_at=datetime(9999, 12, 31, 23, 0, tzinfo=UTC))
    r = viewer_client.get("/")
    assert r.status_code == 200
    bars = bars_of(r.content.decode(), "entries")
    assert len(bars) == BARS
    assert bars[-1][1].startswith("9999:") and bars[0][1].startswith(f"{9999 - BARS + 1}:")
