"""The searchable text of tape entries, and user queries made safe for FTS5 and tsquery.

Plain Python (no Django). Both engines see the same words: runs of letters and digits, every
CJK character a word of its own (so one- and two-character Chinese and Japanese words are found),
and a code identifier such as `context_length_exceeded` split at its underscores and searched as
the phrase of its parts.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

LIMIT = 16_000  # characters of text indexed per memory doc, and per entry whose text is no longer
# ...else an entry's first HEAD and last TAIL characters, GAP between: the end of a long tool output
# or test log (its failure) is found as well as its start.
HEAD, TAIL = 12_000, 4_000
GAP = "\n…\n"
MAX_DEPTH = 24
MARK = "\x01"  # stored around CJK characters (and, for PostgreSQL, punctuation): a separator to both parsers
START, STOP = "\x02", "\x03"  # the engines' highlight markers, taken out of snippets again
# Han, Hiragana, Katakana, Hangul and their neighbours: scripts written without spaces between words.
CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_CJK = re.compile(f"([{CJK}])")
_TOKEN = re.compile(f"[{CJK}]|[^\\W_{CJK}]+")
_TERM = re.compile(r'"([^"]*)"?|(\S+)')
_PUNCT = re.compile(f"([{CJK}]|[^\\w\\s]|_)")
_SPACE = re.compile(r"\s")
# ASCII text's words (_TOKEN's) by translate() and split(): about 5x faster than findall there.
_ASCII_WORDS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
_MARKERS = re.compile("[\x00-\x03]")  # and U+0000, which PostgreSQL's text cannot hold
# Keys whose values are ids, types or times: noise in a text index.
SKIP_KEYS = frozenset(
    {
        *("id", "role", "type", "call_id", "tool_call_id", "run_id", "trace_id", "request_id", "session_id"),
        *("signature", "date", "timestamp", "created_at", "updated_at"),
    }
)
# Latin letters with diacritics fold to their base letter on PostgreSQL, as FTS5's unicode61 does.
_FOLDABLE = re.compile("[\u00c0-\u024f\u1e00-\u1eff]")
_FOLD = {
    c: base
    for c in (*range(0xC0, 0x250), *range(0x1E00, 0x1F00))
    if (base := "".join(x for x in unicodedata.normalize("NFKD", chr(c)) if not unicodedata.combining(x)))
    and base != chr(c)
    and base.isalnum()
}


@dataclass(frozen=True)
class Term:
    """One part of a query every hit must contain: a word, or a phrase of consecutive words."""

    words: tuple[str, ...]
    prefix: bool = False  # the last word may be the start of a longer word (`pars*`)


def spaced_cjk(text: str, sep: str = " ") -> str:
    """Text with `sep` around every CJK character, so that each is a word to the tokenizer."""
    return text if text.isascii() else _CJK.sub(f"{sep}\\1{sep}", text)


def clean(text: str) -> str:
    """Text without the control characters that serve as markers here, nor U+0000."""
    # Substring tests cost far less than a regex pass over every entry's text (see bench/).
    if MARK in text or START in text or STOP in text or "\x00" in text:
        return _MARKERS.sub(" ", text)
    return text


def fts_body(text: str) -> str:
    """What FTS5 stores: CJK characters set apart by a marker that snippets drop again."""
    return native.fts_body(text) if native is not None else python_fts_body(text)


def python_fts_body(text: str) -> str:
    """fts_body in Python: the reference the compiled one (search/_text.c) is held to."""
    return spaced_cjk(clean(text), MARK)


class _Apart(dict):
    """A str.translate table that sets punctuation, `_` and CJK characters apart by MARK, learnt a
    character at a time: translate() costs a fraction of a regex substitution per match."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        self[code] = f"{MARK}{char}{MARK}" if _PUNCT.fullmatch(char) else char
        return self[code]


_APART = _Apart()


def pg_body(text: str) -> str:
    """What ts_headline reads: PostgreSQL's parser would read `src/parser.py` or `a@b.c` as one
    token, so punctuation is set apart too, by the same marker."""
    return clean(text).translate(_APART)


def pg_words(text: str) -> str:
    """The words of a text, lowercased and folded, for to_tsvector('simple', ...)."""
    return joined_words(folded(text))


def words(text: str) -> list[str]:
    """The words FTS5's unicode61 tokenizer would find, after spaced_cjk, lowercased."""
    return joined_words(folded(text)).split()


def folded(text: str) -> str:
    """Text lowercased, its Latin letters without their diacritics: what `words` are found in."""
    low = text.lower()
    # translate() is slow, and most text (even most that is not ASCII) has nothing to fold.
    return low.translate(_FOLD) if not low.isascii() and _FOLDABLE.search(low) else low


def word_spans(text: str) -> list[tuple[int, int, str]]:
    """The words of a text as `words` finds them, each with its [start, end) in the text."""
    # Folded whole where each character folds to one, alone (str.lower's one rule by context is the
    # final sigma): the words then lie where the text's do, and fold as they would alone.
    if "\u03a3" not in text and len(low := folded(text)) == len(text):
        return [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(low)]
    return [(m.start(), m.end(), folded(m.group())) for m in _TOKEN.finditer(text)]


def joined_words(low: str) -> str:
    """The words of a folded text joined by single spaces."""
    return " ".join(low.translate(_ASCII_WORDS).split() if low.isascii() else _TOKEN.findall(low))


def terms(q: str) -> list[Term]:
    """The query's words and "quoted phrases"; syntax characters are separators, never operators."""
    found = []
    for m in _TERM.finditer(q[:1000]):
        phrase, word = m.groups()
        found_words = tuple(words(phrase if phrase is not None else word))
        if found_words:
            found.append(Term(found_words, prefix=phrase is None and word.endswith("*")))
    return found


def fts_query(q: str) -> str:
    """An FTS5 MATCH expression in which every term must match; "" when the query has no words."""
    parts = []
    for term in terms(q):
        parts.append('"' + " ".join(term.words) + '"' + ("*" if term.prefix else ""))
    return " AND ".join(parts)


def pg_query(q: str) -> str:
    """A to_tsquery expression in which every term must match; "" when the query has no words."""
    parts = []
    for term in terms(q):
        quoted = [f"'{w}'" for w in term.words]
        if term.prefix:
            quoted[-1] += ":*"
        parts.append(quoted[0] if len(quoted) == 1 else "(" + " <-> ".join(quoted) + ")")
    return " & ".join(parts)


def payload_text(head: str, payload: Any) -> str:
    """The searchable text of a readable entry whose kind and name are `head`: its strings, depth first
    (the compiled walk where it is built and the payload is plain JSON, else `python_payload_text`)."""
    if native is not None:
        text = native.payload_text(head, payload)
        if text is not None:
            return text
    return python_payload_text(head, payload)


def python_payload_text(head: str, payload: Any) -> str:
    """payload_text in Python: the reference the compiled walk (search/_text.c) is held to."""
    out: list[str] = [head]
    # One character past HEAD + TAIL tells a longer text from one exactly that long.
    _collect(payload, out, HEAD + TAIL + 1 - len(head), 0)
    text = "\n".join(out)
    if len(text) <= HEAD + TAIL:
        return text
    # The tail is walked from the end, so a huge payload's middle is never joined.
    back: list[str] = []
    budget = _collect_back(payload, back, TAIL + 1, 0)
    if budget > 0:
        back.append(head[-budget:])
    tail = "\n".join(reversed(back))
    return text[:HEAD] + GAP + tail[max(len(tail) - TAIL, 0) :]


def _collect(value: Any, out: list[str], budget: int, depth: int) -> int:
    """Append the strings in `value` to `out`, depth first; return the budget left."""
    # Runs for every value of every entry: _add inlined for the common case, a plain string.
    if isinstance(value, dict):
        # Most objects hold none of those keys: their values are taken as they are, with no list made.
        children: Any = value.values() if SKIP_KEYS.isdisjoint(value) else _kept(value)
    elif isinstance(value, list):
        children = value
    else:
        return _add(value, out, budget) if isinstance(value, str) else budget
    for child in children:
        if budget <= 0:
            break
        if type(child) is str:
            if child and not is_blob(child):
                if len(child) > budget:
                    child = child[:budget]
                out.append(child)
                budget -= len(child) + 1
        elif depth < MAX_DEPTH and isinstance(child, (dict, list)):
            budget = _collect(child, out, budget, depth + 1)
    return budget


def _collect_back(value: Any, out: list[str], budget: int, depth: int) -> int:
    """_collect from the end: the strings in `value` last first, the last one cut to its end."""
    if isinstance(value, dict):
        children = list(value.values() if SKIP_KEYS.isdisjoint(value) else _kept(value))
    elif isinstance(value, list):
        children = value
    elif isinstance(value, str) and value and not is_blob(value):
        out.append(value[-budget:])
        return budget - min(len(value), budget) - 1
    else:
        return budget
    for child in reversed(children):
        if budget <= 0:
            break
        if type(child) is str:
            if child and not is_blob(child):
                if len(child) > budget:
                    child = child[-budget:]
                out.append(child)
                budget -= len(child) + 1
        elif depth < MAX_DEPTH and isinstance(child, (dict, list)):
            budget = _collect_back(child, out, budget, depth + 1)
    return budget


def _kept(value: dict) -> list[Any]:
    return [item for key, item in value.items() if key not in SKIP_KEYS]


def _add(text: str, out: list[str], budget: int) -> int:
    if not text or is_blob(text):
        return budget
    text = text[:budget]
    out.append(text)
    return budget - len(text) - 1


def is_blob(value: str) -> bool:
    """A data: URL or a long run without spaces (base64, a hash): nothing anyone searches for."""
    return value.startswith("data:") or (len(value) > 1000 and _SPACE.search(value, 0, 1000) is None)


def cjk_ranges(chars: str = CJK) -> tuple[int, ...]:
    """The code points of CJK's character class as first, last, first, last...: for the compiled walk."""
    found, at = [], 0
    while at < len(chars):
        if at + 2 < len(chars) and chars[at + 1] == "-":
            found += [ord(chars[at]), ord(chars[at + 2])]
            at += 3
        else:
            found += [ord(chars[at])] * 2
            at += 1
    return tuple(found)


try:
    from . import _text as native
except ImportError:  # pragma: no cover - `make setup` builds it
    native = None
else:
    native.configure(HEAD, TAIL, GAP, MAX_DEPTH, SKIP_KEYS, cjk_ranges())
