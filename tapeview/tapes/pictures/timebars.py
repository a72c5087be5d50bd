"""Bars over time for the session index: one per hour, day or month, each a link to its sessions."""

from __future__ import annotations

import html
from collections.abc import Callable

from django.utils.safestring import SafeString

from ..overview import Bucket, Overview
from ..usage import cost_text
from .drawing import ACCENT, BAD, TRACK, _num, _plural, _rect, _svg

WIDTH, HEIGHT, TOP = 300, 64, 4  # the frame (stretched to its box: no text inside); TOP: headroom
WHEN = {"hour": "%d %b %H:00", "day": "%d %b %Y", "month": "%b %Y", "year": "%Y"}
UNIT_WORDS = {"hour": "hour", "day": "day", "month": "month", "year": "year"}


def amount(measure: str, value: float) -> str:
    if measure == "cost":
        return cost_text(value)
    one = {"entries": ("entry", "entries"), "errors": ("error", "errors"), "tokens": ("token", "tokens")}
    return _plural(int(value), *one[measure])


def bucket_words(b: Bucket, unit: str, measure: str) -> str:
    when = b.start.strftime(WHEN[unit]) + (" UTC" if unit == "hour" else "")
    sessions = _plural(b.sessions, "session")
    return f"{when}: {amount(measure, getattr(b, measure))} in {sessions}"


def bars(data: Overview, measure: str, link: Callable[[Bucket], str]) -> SafeString:
    """One bar per bucket of `measure` (a field of Bucket), scaled to the largest; every bar that
    holds a session links to them (`link`). Its words: the measure, the range, the total and peak."""
    values = [getattr(b, measure) for b in data.buckets]
    total, peak = sum(values), max(values, default=0)
    unit = UNIT_WORDS[data.unit]
    if not data.buckets:
        words = f"{measure} per {unit}: no session has a time yet"
    else:
        first, last = data.buckets[0].start, data.buckets[-1].start
        span = f"{first.strftime(WHEN[data.unit])} to {last.strftime(WHEN[data.unit])}"
        most, all_of = amount(measure, peak), amount(measure, total)
        words = f"{measure} per {unit}, {span} (UTC): {all_of}; the most in one {unit}: {most}"
    step = WIDTH / max(len(values), 1)
    fill = BAD if measure == "errors" else ACCENT
    body = [_rect("pic-track", 0, HEIGHT - 1, WIDTH, 1, TRACK)]
    for i, (b, value) in enumerate(zip(data.buckets, values, strict=True)):
        h = (HEIGHT - 1 - TOP) * value / peak if peak and value > 0 else 0
        h = max(h, 1.5) if value > 0 else 0
        shapes = [
            _rect("pic-hit", i * step, TOP, step, HEIGHT - TOP, "transparent"),
            _rect(f"pic-bar pic-{measure}", i * step + step * 0.1, HEIGHT - 1 - h, step * 0.8, h, fill),
        ]
        title = html.escape(bucket_words(b, data.unit, measure))
        if b.sessions:
            body.append(
                f'<a href="{html.escape(link(b))}" class="pic-when" data-start="{b.start.isoformat()}">'
                f"<title>{title}</title>{''.join(shapes)}</a>"
            )
        else:
            body.append(f"<g><title>{title}</title>{''.join(shapes)}</g>")
    return _svg(
        f"pic-timebars pic-{measure}-bars",
        "group",
        words,
        (WIDTH, HEIGHT),
        body,
        width="100%",
        preserveAspectRatio="none",
        **{"data-measure": measure, "data-bars": _num(len(values))},
    )
