"""The pictures of a tape as inline SVG: the activity sparkline, the strip of marks, the phase bars."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.template import Context, Template
from django.test import RequestFactory

from tapeview.tapes import bulk, pictures
from tapeview.tapes.models import Anchor, Tape
from tapeview.tapes.packing import Batch, flags, micros
from tapeview.tapes.phases import Phase
from tapeview.tapes.views import phase_table

from .test_phases import bub_lines, expected_bub_phases, is_error

pytestmark = pytest.mark.django_db

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(autouse=True)
def fresh_cache():
    cache.clear()
    yield
    cache.clear()


def render(tag: str, tape: Tape) -> str:
    return Template("{% load pictures %}{% " + tag + " tape %}").render(Context({"tape": tape}))


def bars_of(tape: Tape) -> str:
    """The phase bars as the timeline's phase table draws them (tapes.views.phase_table)."""
    return str(phase_table.phase_table(RequestFactory().get("/"), tape)["phase_bars_svg"])


def svg_of(html: str) -> ET.Element:
    """The one <svg> of a fragment, parsed as XML (so it must be well formed and escaped)."""
    found = re.findall(r"<svg class=\"pic pic-.*?</svg>", html, re.S)
    assert len(found) == 1, html
    return ET.fromstring(found[0])


def links(svg: ET.Element) -> list[ET.Element]:
    return svg.findall(f"{SVG}a")


def title(el: ET.Element) -> str:
    return el.find(f"{SVG}title").text


# The strip


def test_the_strip_marks_each_anchor_error_and_tool_call_where_it_falls(served) -> None:
    lines = bub_lines(served["samples"] / "session_realistic.jsonl")
    tape = Tape.objects.get(name="session_realistic")
    errors = [n for n, line in enumerate(lines, 1) if is_error(line)]
    anchors = [n for n, line in enumerate(lines, 1) if line["kind"] == "anchor" and n not in errors]
    calls = [n for n, line in enumerate(lines, 1) if line["kind"] == "tool_call" and n not in errors]
    assert anchors and errors and calls

    svg = svg_of(render("tape_strip", tape))
    assert svg.get("role") == "group"
    assert (
        svg.get("aria-label")
        == title(svg)
        == (
            f"where anchors, errors and tool calls fall along {len(lines)} entries: "
            f"{len(anchors)} anchors, {len(errors)} error{'s' if len(errors) > 1 else ''}, "
            f"{len(calls)} tool calls"
        )
    )
    marks = links(svg)
    by_kind = {w: [int(a.get("data-pos")) for a in marks if a.get("data-what") == w] for w in pictures.MARKS}
    assert by_kind == {"anchor": anchors, "error": errors, "call": calls}
    step = 1000 / len(lines)  # a short tape: one bucket per entry
    for a in marks:
        pos = int(a.get("data-pos"))
        assert a.get("href") == f"?at={pos}#e{pos}"
        rect = a.find(f"{SVG}rect")
        assert rect.get("class") == f"pic-{a.get('data-what')}"
        width = float(rect.get("width"))
        centred = min(max((pos - 0.5) * step - width / 2, 0), 1000 - width)  # kept inside the strip
        assert float(rect.get("x")) == pytest.approx(centred, abs=0.01)
    # Told apart by shape, not colour alone: anchors cross the whole height, calls only the bottom.
    heights = {a.get("data-what"): a.find(f"{SVG}rect").get("height") for a in marks}
    assert heights == {"anchor": "24", "error": "9", "call": "8"}
    named = {int(a.get("data-pos")): title(a) for a in marks if a.get("data-what") == "anchor"}
    first = anchors[0]
    assert named[first] == f"1 anchor {lines[first - 1]['payload']['name']} at #{first}"


def test_the_strip_of_a_long_tape_groups_its_marks_into_buckets(db) -> None:
    tape = big_tape(rows=5000)
    with_queries = pictures.marks(tape)
    assert with_queries.buckets == pictures.STRIP_BUCKETS
    assert len(with_queries.marks) <= 3 * pictures.STRIP_BUCKETS
    totals = {w: sum(m.count for m in with_queries.marks if m.what == w) for w in pictures.MARKS}
    kinds = [big_kind(pos) for pos in range(1, 5001)]
    anchors, errors = kinds.count(("anchor", False)), sum(e for _, e in kinds)
    calls = kinds.count(("tool_call", False))
    assert totals == {"anchor": anchors, "error": errors, "call": calls}
    svg = svg_of(render("tape_strip", tape))
    assert svg.get("aria-label").endswith(
        f"along 5,000 entries: {anchors} anchors, {errors} errors, {calls} tool calls"
    )
    first = links(svg)[0]  # the first bucket of anchors: positions 1 to 25
    assert (first.get("href"), title(first)) == ("?at=1#e1", "1 anchor phase/0 at #1")
    calls = [a for a in links(svg) if a.get("data-what") == "call"]
    assert title(calls[0]) == "3 tool calls at #7–#21"


def test_the_picture_queries_stay_bounded_on_a_long_tape(db, django_assert_max_num_queries) -> None:
    tape = big_tape(rows=20_000)
    with django_assert_max_num_queries(1):
        spark = svg_of(render("tape_sparkline", tape))
    assert len(spark.findall(f"{SVG}rect")) <= pictures.SPARK_BUCKETS + 1  # the bars and the baseline
    with django_assert_max_num_queries(1):
        strip = svg_of(render("tape_strip", tape))
    assert len(links(strip)) <= 3 * pictures.STRIP_BUCKETS
    with django_assert_max_num_queries(0):  # drawn again: the aggregates are kept until the tape changes
        render("tape_sparkline", tape) + render("tape_strip", tape)


def test_positions_far_past_a_32_bit_product_still_fall_in_their_bucket(db) -> None:
    tape = Tape.objects.create(
        key="far", source="s", kind="bub", rel="far", path="/x", name="far", label="far"
    )
    batch = Batch()
    for pos, kind in ((1, "anchor"), (30_000_000, "tool_call"), (49_999_999, "anchor")):
        batch.add(
            pos, pos, 1, pos, kind, f"n{pos}", micros(None), flags(True, False, True, True, kind == "anchor")
        )
    bulk.append(tape, batch)
    tape.next_pos = 50_000_000
    tape.save()
    found = pictures.marks(tape)
    assert [(m.what, m.bucket, m.first_pos) for m in found.marks] == [
        ("anchor", 0, 1),
        ("anchor", 199, 49_999_999),
        ("call", 119, 30_000_000),
    ]


def test_marks_and_names_are_escaped() -> None:
    name = '</title><script>alert("x")</script>&'
    data = pictures.Marks((pictures.Mark("anchor", 0, 1, 3, 3, name),), 1, 5)
    svg = ET.fromstring(str(pictures.strip(data)))
    assert title(links(svg)[0]) == f"1 anchor {name} at #3"
    assert "<script>" not in str(pictures.strip(data))


# The sparkline


def test_the_sparkline_shows_a_tapes_activity_over_its_life(served) -> None:
    lines = bub_lines(served["samples"] / "session_realistic.jsonl")
    dates = [datetime.fromisoformat(line["date"]) for line in lines]
    span_ms = round((max(dates) - min(dates)).total_seconds() * 1000)
    tape = Tape.objects.get(name="session_realistic")
    svg = svg_of(render("tape_sparkline", tape))
    words = f"activity over {span_ms} milliseconds: {len(lines)} entries"
    assert (svg.get("role"), svg.get("aria-label"), title(svg)) == ("img", words, words)
    assert (svg.get("width"), svg.get("height")) == ("80", "18")
    bars = [r for r in svg.findall(f"{SVG}rect") if r.get("class") == "pic-spark"]
    assert 1 <= len(bars) <= pictures.SPARK_BUCKETS
    assert min(float(r.get("y")) for r in bars) == 0  # the busiest stretch reaches the top


def test_a_tape_without_dates_shows_its_activity_by_position(served) -> None:
    tape = Tape.objects.get(name="session_realistic")
    Tape.objects.filter(pk=tape.pk).update(first_at=None, last_at=None)
    tape.refresh_from_db()
    svg = svg_of(render("tape_sparkline", tape))
    assert svg.get("aria-label") == f"activity by position, times unknown: {tape.next_pos - 1} entries"


def test_the_sparkline_of_a_long_tape_counts_entries_per_stretch_of_time(db) -> None:
    tape = big_tape(rows=5000)
    found = pictures.activity(tape)
    assert (found.by, len(found.counts), sum(found.counts)) == ("time", pictures.SPARK_BUCKETS, 5000)
    # An entry every 4 minutes over 14 days less 4 minutes: the same count in every 40th of it.
    assert max(found.counts) - min(found.counts) <= 1
    assert svg_of(render("tape_sparkline", tape)).get("aria-label") == "activity over 14 days: 5,000 entries"


def test_an_empty_tape_draws_an_empty_picture(db) -> None:
    tape = Tape.objects.create(key="empty", source="s", kind="bub", rel="e", path="/e", name="e", label="e")
    assert svg_of(render("tape_sparkline", tape)).get("aria-label") == "no activity yet"
    strip = svg_of(render("tape_strip", tape))
    assert links(strip) == [] and strip.get("aria-label").endswith("0 anchors, 0 errors, 0 tool calls")


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0.075, "75 milliseconds"),
        (1, "1 second"),
        (90, "90 seconds"),
        (600, "10 minutes"),
        (3 * 3600, "3 hours"),
        (14 * 86400, "14 days"),
    ],
)
def test_spans_read_in_round_words(seconds: float, words: str) -> None:
    assert pictures.span_words(seconds) == words


# The phase bars


def test_a_bar_per_phase_of_its_tokens_and_cache_hit_rate_links_to_the_phase(served) -> None:
    expected = expected_bub_phases(served["samples"] / "session_realistic.jsonl")
    tape = Tape.objects.get(name="session_realistic")
    svg = svg_of(bars_of(tape))
    bars = links(svg)
    assert [int(a.get("data-index")) for a in bars] == [p["index"] for p in expected]
    peak = max(p["tokens"]["prompt"] + p["tokens"]["completion"] for p in expected)
    assert svg.get("aria-label") == (
        f"tokens per phase (prompt and completion) and cache hit rate, for {len(expected)} phases; "
        f"the most in one phase: {peak:,} tokens"
    )
    for a, p in zip(bars, expected, strict=True):
        t = p["tokens"]
        assert a.get("href") == f"?at={p['start_pos']}#e{p['start_pos']}"
        rate = t["cached"] / t["prompt"]
        assert title(a) == (
            f"phase {p['index']}, {p['anchor']['name']}: {t['prompt'] + t['completion']:,} tokens "
            f"(prompt {t['prompt']:,}, completion {t['completion']:,}), cache hit {rate:.0%}"
        )
        rects = {r.get("class"): r for r in a.findall(f"{SVG}rect")}
        assert float(rects["pic-bar pic-prompt"].get("width")) == pytest.approx(
            170 * t["prompt"] / peak, abs=0.01
        )
        assert float(rects["pic-bar pic-completion"].get("width")) == pytest.approx(
            170 * t["completion"] / peak, abs=0.01
        )
        assert float(rects["pic-bar pic-cache"].get("width")) == pytest.approx(56 * rate, abs=0.01)


def test_the_timeline_shows_the_phase_bars_above_the_phase_table(viewer_client, served) -> None:
    tape = Tape.objects.get(name="session_realistic")
    html = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert html.index('id="phase-bars"') < html.index('<table class="phase-table">')
    headers = {"HX-Request": "true", "HX-Target": "phase-table"}
    sorted_html = viewer_client.get(
        f"/tapes/{tape.key}/", {"psort": "-tokens"}, headers=headers
    ).content.decode()
    # Sorting the table keeps the bars in file order.
    order = [a.get("data-index") for a in links(svg_of(sorted_html))]
    assert order == sorted(order, key=int)


def test_a_tape_of_many_phases_draws_the_first_ones(db) -> None:
    tape = Tape.objects.create(key="many", source="s", kind="bub", rel="m", path="/m", name="m", label="m")
    Anchor.objects.bulk_create(
        Anchor(
            tape=tape,
            pos=n * 10,
            name=f"phase/{n}",
            phase_index=n,
            prompt_tokens=100 * n,
            completion_tokens=n,
        )
        for n in range(1, 76)
    )
    Tape.objects.filter(pk=tape.pk).update(phase_count=75)
    tape.refresh_from_db()
    svg = svg_of(bars_of(tape))
    bars = links(svg)
    assert len(bars) == pictures.PHASE_BARS and bars[-1].get("href") == f"?at={pictures.PHASE_BARS * 10}#e600"
    assert f"for {pictures.PHASE_BARS} phases of 75;" in svg.get("aria-label")
    assert title(bars[0]) == "phase 1, phase/1: 101 tokens (prompt 100, completion 1), cache hit unknown"


def test_phases_without_tokens_draw_no_bars() -> None:
    phase = Phase(0, None, 1, 5, 5, None, None, None, None, None, 0, 0, "")
    assert pictures.phase_bars([phase]) == ""


def test_a_phase_of_tokens_without_cache_figures_says_so() -> None:
    phase = Phase(0, None, 1, 5, 5, None, None, 1200, 34, None, 0, 0, "")
    svg = ET.fromstring(str(pictures.phase_bars([phase], total=3)))
    assert title(links(svg)[0]) == (
        "phase 0, before the first anchor: 1,234 tokens (prompt 1,200, completion 34), cache hit unknown"
    )
    assert "for 1 phase of 3;" in svg.get("aria-label")


def big_kind(pos: int) -> tuple[str, bool]:
    """The kind of entry at a position of a big tape, and whether it is an error."""
    if pos % 97 == 0:
        return "tool_result", True
    if pos % 500 == 1:
        return "anchor", False
    return ("tool_call" if pos % 7 == 0 else "message"), False


def big_tape(rows: int) -> Tape:
    """A tape of `rows` entries, one every 4 minutes: an anchor every 500, an error every 97, a
    tool call every 7 (errors first)."""
    start = datetime(2026, 11, 1, tzinfo=UTC)
    tape = Tape.objects.create(
        key=f"big{rows}",
        source="s",
        kind="bub",
        rel=f"big{rows}",
        path=str(Path("/nowhere") / "big.jsonl"),
        name="big",
        label="big",
        next_pos=rows + 1,
        entries=rows,
        first_at=start,
        last_at=start + timedelta(minutes=4 * (rows - 1)),
    )

    batch = Batch()
    for pos in range(1, rows + 1):
        kind, is_error = big_kind(pos)
        name = f"phase/{pos // 500}" if kind == "anchor" else ""
        date = micros(start + timedelta(minutes=4 * (pos - 1)))
        batch.add(
            pos, pos * 100, 100, pos, kind, name, date, flags(True, is_error, True, True, kind == "anchor")
        )
    bulk.append(tape, batch)
    return tape
