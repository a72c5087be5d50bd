"""The pictures of a tape drawn as inline SVG: pure functions from numbers to escaped markup.

Colours come from classes (static/pictures.css) over presentation attributes that keep the
pictures readable where that file is not loaded; every picture says in words what it shows.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from ..phases import Phase
from .tallies import MARK_WORDS, MARKS, Activity, Mark, Marks


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def span_words(seconds: float) -> str:
    """A stretch of time in round words: "75 milliseconds", "3 hours", "14 days"."""
    if seconds < 1:
        return _plural(max(round(seconds * 1000), 1), "millisecond")
    for limit, size, unit in ((120, 1, "second"), (7200, 60, "minute"), (172800, 3600, "hour")):
        if seconds < limit:
            return _plural(round(seconds / size), unit)
    return _plural(round(seconds / 86400), "day")


def _at(pos: int) -> str:
    return f"?at={pos}#e{pos}"


def _num(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _rect(cls: str, x: float, y: float, w: float, h: float, fill: str, opacity: str = "") -> SafeString:
    """A rectangle of a class; `fill` (and `opacity`) only for where pictures.css is not loaded."""
    # Plain text, no format_html: every value is a number or one of this module's words (escaped
    # all the same, as django's escape does), and a draw makes hundreds of them.
    shade = f' fill-opacity="{html.escape(opacity)}"' if opacity else ""
    # Never a negative size, whatever an index built from a hostile file holds: a browser refuses one.
    w, h = max(w, 0), max(h, 0)
    return mark_safe(
        f'<rect class="{html.escape(cls)}" x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" '
        f'height="{_num(h)}" fill="{html.escape(fill)}"{shade}/>'
    )


def _text(x: float, y: float, text: str, anchor: str = "start") -> SafeString:
    return mark_safe(
        f'<text class="pic-label" x="{_num(x)}" y="{_num(y)}" text-anchor="{html.escape(anchor)}" '
        f'font-size="9" fill="{MUTED}">{html.escape(text)}</text>'
    )


def _svg(cls: str, role: str, words: str, view: tuple[int, int], body: list[str], **attrs) -> SafeString:
    """The picture's frame: its summary in words is both its accessible name and its tooltip."""
    return format_html(
        '<svg class="pic {}" role="{}" aria-label="{}"{} viewBox="0 0 {} {}" '
        'xmlns="http://www.w3.org/2000/svg"><title>{}</title>{}</svg>',
        cls,
        role,
        words,
        format_html_join("", ' {}="{}"', attrs.items()),
        *view,
        words,
        mark_safe("".join(body)),
    )


# The fallback colours, as static/pictures.css's fallbacks.
ACCENT, BAD, OK, MUTED, TRACK = "#2f5bd3", "#c62828", "#2e7d32", "#6a7283", "#d0d4dc"


def sparkline(data: Activity, width: int = 80, height: int = 18) -> SafeString:
    """A small bar chart of activity, with its summary in words as its accessible name."""
    total = sum(data.counts)
    entries = _plural(total, "entry", "entries")
    if not total:
        words = "no activity yet"
    elif data.by == "time":
        words = f"activity over {span_words(data.span_s)}: {entries}"
    else:
        words = f"activity by position, times unknown: {entries}"
    peak, step = max(data.counts, default=0), width / max(len(data.counts), 1)
    body = [_rect("pic-track", 0, height - 1, width, 1, TRACK)]
    for i, n in enumerate(data.counts):
        if n:
            h = max((height - 1) * n / peak, 1)
            body.append(_rect("pic-spark", i * step, height - 1 - h, max(step * 0.8, 0.5), h, ACCENT))
    return _svg("pic-sparkline", "img", words, (width, height), body, width=width, height=height)


# A lane per kind of mark, so that shape and place tell them apart, not colour alone: anchors
# as ticks through the whole height, errors as blocks in the top lane, tool calls as short
# ticks in the bottom lane. (y, height, least width in units of the 1000-wide strip, fill)
STRIP_HEIGHT = 24
LANES = {
    "anchor": (0, 24, 2.0, ACCENT),
    "error": (1, 9, 5.0, BAD),
    "call": (16, 8, 1.5, MUTED),
}


def _mark_title(m: Mark) -> str:
    """The mark's title, escaped: only an anchor's name may hold what HTML must escape."""
    one, many = MARK_WORDS[m.what]
    where = f"#{m.first_pos:,}" if m.first_pos == m.last_pos else f"#{m.first_pos:,}–#{m.last_pos:,}"
    named = f" {html.escape(m.name)}" if m.what == "anchor" and m.count == 1 and m.name else ""
    return f"{m.count:,} {one if m.count == 1 else many}{named} at {where}"


def strip(data: Marks, width: int = 1000) -> SafeString:
    """The whole tape as a bar, its anchors, errors and tool calls marked where they fall; each
    mark links to the timeline at its first entry."""
    totals = dict.fromkeys(MARKS, 0)
    for m in data.marks:
        totals[m.what] += m.count
    counted = ", ".join(_plural(totals[w], *MARK_WORDS[w]) for w in MARKS)
    along = _plural(data.positions, "entry", "entries")
    words = f"where anchors, errors and tool calls fall along {along}: {counted}"
    step = width / max(data.buckets, 1)
    body = [_rect("pic-track", 0, STRIP_HEIGHT / 2 - 2, width, 4, TRACK)]
    # Hundreds of marks, the first draw after every append: built as format_html and _rect would,
    # the one text in them escaped (as django's escape does), what a lane's marks share made once.
    lanes = {}
    for what, (y, h, least, fill) in LANES.items():
        w = max(step * 0.8, least)
        lanes[what] = (w, f'" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}" fill="{fill}"/></a>', {})
    for m in data.marks:
        w, rest, xs = lanes[m.what]
        x = xs.get(m.bucket)  # a bucket's place in its lane, worked out once a draw
        if x is None:
            x = xs[m.bucket] = _num(min(max(m.bucket * step + step / 2 - w / 2, 0), width - w))
        body.append(
            f'<a href="?at={m.first_pos}#e{m.first_pos}" class="pic-mark" data-what="{m.what}" '
            f'data-pos="{m.first_pos}"><title>{_mark_title(m)}</title>'
            f'<rect class="pic-{m.what}" x="{x}{rest}'
        )
    # role="group", not "img": an img's children are hidden from assistive technology, and
    # each mark here is a link.
    return _svg(
        "pic-strip",
        "group",
        words,
        (width, STRIP_HEIGHT),
        body,
        width="100%",
        height=STRIP_HEIGHT,
        preserveAspectRatio="none",
    )


def cache_hit_rate(p: Phase) -> float | None:
    if not p.prompt_tokens or p.prompt_tokens < 0 or p.cached_tokens is None:
        return None
    return min(max(p.cached_tokens / p.prompt_tokens, 0.0), 1.0)


def _phase_title(p: Phase) -> str:
    name = p.anchor.name if p.anchor is not None else "before the first anchor"
    if p.tokens is None:
        return f"phase {p.index}, {name}: tokens unknown"
    rate = cache_hit_rate(p)
    return (
        f"phase {p.index}, {name}: {_plural(p.tokens, 'token')} (prompt {p.prompt_tokens:,}, "
        f"completion {(p.completion_tokens or 0):,}), "
        f"cache hit {'unknown' if rate is None else f'{rate:.0%}'}"
    )


# The phase bars' geometry: a row per phase, its number, its tokens' bar, its cache hit rate's.
ROW, BAR, LABEL_W, TOKENS_W, GAP, CACHE_W = 14, 10, 18, 170, 8, 56
CACHE_X = LABEL_W + TOKENS_W + GAP
BARS_W = CACHE_X + CACHE_W


def _phase_row(p: Phase, y: int, peak: int) -> SafeString:
    # An index built before usage had to be a sane count (python_json.is_count) may hold negatives.
    prompt = TOKENS_W * max(p.prompt_tokens or 0, 0) / peak
    completion = TOKENS_W * max(p.completion_tokens or 0, 0) / peak
    rate = cache_hit_rate(p)
    shapes = [
        _rect("pic-hit", 0, y - 2, BARS_W, ROW, "transparent"),
        _text(LABEL_W - 4, y + BAR - 1, str(p.index), "end"),
        _rect("pic-bar pic-prompt", LABEL_W, y, prompt, BAR, ACCENT),
        # Thinner than the prompt's, so the two differ by shape as well as by shade.
        _rect("pic-bar pic-completion", LABEL_W + prompt, y + 2, completion, BAR - 4, ACCENT, ".45"),
        _rect("pic-track", CACHE_X, y, CACHE_W, BAR, TRACK),
    ]
    if rate is not None:
        shapes.append(_rect("pic-bar pic-cache", CACHE_X, y, CACHE_W * rate, BAR, OK))
    return mark_safe(
        f'<a href="{_at(p.start_pos)}" class="pic-phase" data-index="{p.index}" data-pos="{p.start_pos}">'
        f"<title>{html.escape(_phase_title(p))}</title>{''.join(shapes)}</a>"
    )


def phase_bars(found: Sequence[Phase], total: int | None = None) -> SafeString:
    """Per phase, in file order, a bar of its prompt and completion tokens (scaled to the largest)
    and one of its cache hit rate; each row links to the phase's first entry. Empty when no
    phase reports tokens."""
    if not any(p.tokens is not None for p in found):
        return mark_safe("")
    shown, total = len(found), total if total is not None else len(found)
    peak = max(max(p.prompt_tokens or 0, 0) + max(p.completion_tokens or 0, 0) for p in found) or 1
    of = f" of {total:,}" if total > shown else ""
    words = (
        f"tokens per phase (prompt and completion) and cache hit rate, for {_plural(shown, 'phase')}{of}; "
        f"the most in one phase: {_plural(peak, 'token')}"
    )
    body = [_text(LABEL_W, 9, "tokens: prompt, completion"), _text(CACHE_X, 9, "cache hit")]
    body += [_phase_row(p, ROW + i * ROW, peak) for i, p in enumerate(found)]
    return _svg("pic-phases", "group", words, (BARS_W, ROW + shown * ROW), body, width="100%")
