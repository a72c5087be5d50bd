"""An engine's snippet as plain text with the offsets of the query's matches, and its HTML.

Plain Python (no Django).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence

from .text import Term, word_spans

Span = tuple[int, int]
_MARKERS = str.maketrans("", "", "\x01\x02\x03")  # text.MARK, START and STOP: what the engines add
_SEPARATE = re.compile(r"[^\W_]|\s")  # what keeps two matches apart: a letter, digit or space between


def marked(snippet: str, query: Sequence[Term], head: str = "") -> tuple[str, tuple[Span, ...]]:
    """The plain text of an engine's snippet (each run of white space one space) and where the
    query's terms are in it: [start, end) offsets in characters (code points).

    The offsets come from the query, not from the engine's marks, so both engines agree: FTS5
    marks a phrase, ts_headline every word of it wherever it is (`色` in `颜色` for 蓝色). Matches
    that touch (`中` and `文` in `中文`) are one. A `head` the snippet starts with (an entry's
    kind and name, which pages show apart) is left out, unless a match is in it.
    """
    plain = " ".join(snippet.translate(_MARKERS).split())  # split() splits where the regex \s would
    spans = _matches(plain, query)
    cut = len(head) + 1
    if head and plain.startswith(head + " ") and len(plain) > cut and (not spans or spans[0][0] >= cut):
        return plain[cut:], tuple((s - cut, e - cut) for s, e in spans)
    return plain, spans


def _matches(text: str, query: Sequence[Term]) -> tuple[Span, ...]:
    tokens = word_spans(text)
    words = [word for _, _, word in tokens]
    found: list[Span] = []
    for term in query:
        *lead, last = term.words
        n = len(lead)
        for k in _starts(words, None if term.prefix and not lead else term.words[0]):
            if k + n >= len(words) or words[k : k + n] != lead:
                continue
            word = words[k + n]
            if word == last or (term.prefix and word.startswith(last)):
                found.append((tokens[k][0], tokens[k + n][1]))
    spans: list[Span] = []
    for start, end in sorted(found):
        if spans and (start <= spans[-1][1] or not _SEPARATE.search(text, spans[-1][1], start)):
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return tuple(spans)


def _starts(words: list[str], first: str | None) -> Iterator[int]:
    """Where a term may start among the words: at each `first` (found by list.index, in C), or
    anywhere for a term of one word that may be a prefix."""
    if first is None:
        yield from range(len(words))
        return
    k = -1
    while True:
        try:
            k = words.index(first, k + 1)
        except ValueError:
            return
        yield k


def marked_html(plain: str, spans: tuple[Span, ...]) -> str:
    """HTML of a snippet: the text escaped, its matches in <mark>."""
    out, at = [], 0
    for start, end in spans:
        out += [html.escape(plain[at:start]), "<mark>", html.escape(plain[start:end]), "</mark>"]
        at = end
    out.append(html.escape(plain[at:]))
    return "".join(out)
