"""An engine's snippet as plain text with the offsets of the query's matches, and its HTML.

Plain Python (no Django).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from .text import Term, word_spans

Span = tuple[int, int]
_MARKERS = re.compile("[\x01-\x03]")  # text.MARK, START and STOP: what the engines add to the text
_BLANK = re.compile(r"\s+")
_SEPARATE = re.compile(r"[^\W_]|\s")  # what keeps two matches apart: a letter, digit or space between


def marked(snippet: str, query: Sequence[Term], head: str = "") -> tuple[str, tuple[Span, ...]]:
    """The plain text of an engine's snippet (each run of white space one space) and where the
    query's terms are in it: [start, end) offsets in characters (code points).

    The offsets come from the query, not from the engine's marks, so both engines agree: FTS5
    marks a phrase, ts_headline every word of it wherever it is (`色` in `颜色` for 蓝色). Matches
    that touch (`中` and `文` in `中文`) are one. A `head` the snippet starts with (an entry's
    kind and name, which pages show apart) is left out, unless a match is in it.
    """
    plain = _BLANK.sub(" ", _MARKERS.sub("", snippet)).strip()
    spans = _matches(plain, query)
    cut = len(head) + 1
    if head and plain.startswith(head + " ") and len(plain) > cut and (not spans or spans[0][0] >= cut):
        return plain[cut:], tuple((s - cut, e - cut) for s, e in spans)
    return plain, spans


def _matches(text: str, query: Sequence[Term]) -> tuple[Span, ...]:
    tokens = word_spans(text)
    found: list[Span] = []
    for k in range(len(tokens)):
        for term in query:
            last = k + len(term.words) - 1
            if last >= len(tokens) or any(tokens[k + n][2] != w for n, w in enumerate(term.words[:-1])):
                continue
            word = tokens[last][2]
            if word == term.words[-1] or (term.prefix and word.startswith(term.words[-1])):
                found.append((tokens[k][0], tokens[last][1]))
    spans: list[Span] = []
    for start, end in sorted(found):
        if spans and (start <= spans[-1][1] or not _SEPARATE.search(text, spans[-1][1], start)):
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return tuple(spans)


def marked_html(plain: str, spans: tuple[Span, ...]) -> str:
    """HTML of a snippet: the text escaped, its matches in <mark>."""
    out, at = [], 0
    for start, end in spans:
        out += [html.escape(plain[at:start]), "<mark>", html.escape(plain[start:end]), "</mark>"]
        at = end
    out.append(html.escape(plain[at:]))
    return "".join(out)
