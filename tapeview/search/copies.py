"""Near-duplicate hits folded under the entry they repeat. Plain Python (no Django).

Agents write the same text more than once: yachiyo streams an answer (`llm.stream.delta`) before
it keeps the message, streams a tool call's arguments (`tool_call.delta`, `tool_call.stable`,
`llm.final`) before the call, and copies the conversation into every `llm.prompt.assembled`; its
runs (anchors) repeat their input and output. Bub's `loop.start` repeats the user's prompt and a
`handoff` event its anchor. So a hit folds under another hit of its tape when

- the lines of both that match the query are the same lines, or
- it is an anchor or an event, and its text holds a telling line (one with more than the words
  that matched) of a hit that comes before it here: messages, tool calls and results, system
  prompts and errors come first, then anchors, then events. Of several, it folds under the one
  whose longest line it holds (a prompt copy holds the user's words and, shorter, the tool call
  that quoted them).

The lead of a group is the entry of the first of those tiers, then the best ranked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from .text import Term, folded, joined_words

TIERS = {"anchor": 1, "event": 2}  # every other kind: 0
MORE_WORDS = 2  # a telling line has this many words besides the longest term of the query
LINES = 100  # matching lines of a doc compared at most: enough to tell copies, and bounded
TELLING = 3  # telling lines of a hit that its copies are looked for by: its longest


class Row(Protocol):
    id: int
    tape_id: int | None
    kind: str


def fold(rows: Sequence[Row], bodies: Mapping[int, str], query: Sequence[Term]) -> list[list[int]]:
    """The rows (best first) in groups, each a list of indices into `rows`: its lead, then the rows
    that repeat it. Groups come in the order of their leads; `bodies` holds the searchable text of
    the rows that may fold (a row without one stays a group of its own)."""
    needles = [" " + " ".join(t.words) + ("" if t.prefix else " ") for t in query]
    firsts = re.compile(
        "|".join(re.escape(w) for w in sorted({t.words[0] for t in query}, key=len, reverse=True))
    )
    longest = max((len(t.words) for t in query), default=0)
    matched: dict[int, list[str]] = {}
    seen: dict[str, list[str]] = {}  # the same text, matched once: agents write many texts again and again
    lines: dict[str, str | None] = {}  # and the same lines in different texts
    for i, row in enumerate(rows):
        if row.id in bodies and query:
            body = bodies[row.id]
            if (found := seen.get(body)) is None:
                some = (_matching(x, lines, needles) for x in _lines_with(folded(body), firsts))
                found = seen[body] = [x for x in some if x is not None]
            matched[i] = found
    # The longest few lines that say more than the words matched: a copy holds one of them.
    telling = {
        i: sorted({x for x in found if x.count(" ") + 1 >= longest + MORE_WORDS}, key=lambda x: (len(x), x))[
            -TELLING:
        ]
        for i, found in matched.items()
    }
    lead: dict[int, int] = {}
    same: dict[tuple, int] = {}  # (tape, matching lines) -> the lead of those lines
    leads: dict[int | None, list[int]] = {}  # per tape, in the order rows are taken here
    # Per tape and tier, the leads of the tiers before it: the tape's leads when its first row of
    # the tier is taken, as rows are taken tier by tier (looked for at every row, they cost as the
    # square of a tape's rows).
    lower: dict[tuple[int | None, int], list[int]] = {}
    for i in sorted(range(len(rows)), key=lambda i: (TIERS.get(rows[i].kind, 0), i)):
        row, found = rows[i], matched.get(i)
        tier = TIERS.get(row.kind, 0)
        copied = None
        if tier:
            if (earlier := lower.get((row.tape_id, tier))) is None:
                earlier = lower[row.tape_id, tier] = [*leads.get(row.tape_id, ())]
            copied = _copied(found, earlier, telling)
        if copied is None:
            copied = same.setdefault((row.tape_id, tuple(found)), i) if found else i
        lead[i] = copied
        if copied == i:
            leads.setdefault(row.tape_id, []).append(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(rows)):
        groups.setdefault(lead[i], [lead[i]])
        if lead[i] != i:
            groups[lead[i]].append(i)
    return sorted(groups.values())  # in the order of their leads: a hit keeps its own place


def twins(
    rows: Sequence[Row], groups: list[list[int]], same: Mapping[int, object]
) -> list[tuple[list[int], list[int]]]:
    """The groups with the leads of their twins: the same entry of another tape that is a copy of
    this one (a tape copied into several folders), by `same` (a lead's row index -> what makes it
    that entry; a lead not in it has no twin). Each group comes once, where its first twin is, its
    twins' leads after it; their own copies are theirs, the same as the group's."""
    first: dict[object, int] = {}
    out: list[tuple[list[int], list[int]]] = []
    for group in groups:
        key = same.get(group[0])
        if key is not None and key in first:
            out[first[key]][1].append(group[0])
            continue
        if key is not None:
            first[key] = len(out)
        out.append((group, []))
    return out


def _copied(lines: list[str] | None, earlier: list[int], telling: Mapping[int, list[str]]) -> int | None:
    """The one of the `earlier` leads whose longest telling line `lines` hold (a line of them, or
    in one); the first of them when several hold lines as long. A line that holds a telling line
    holds a term, so the matching lines of a copy are all there is to look in."""
    if not lines or not earlier:
        return None
    text = " " + " \n ".join(lines) + " "
    best, size = None, 0
    for j in earlier:
        held = max((len(x) for x in telling.get(j, ()) if f" {x} " in text), default=0)
        if held > size:
            best, size = j, held
    return best


def _matching(line: str, lines: dict[str, str | None], needles: list[str]) -> str | None:
    """The words of a line joined by spaces if they hold a term of the query (a needle), else None;
    each line's once (`lines`)."""
    if line not in lines:
        words = joined_words(line)
        lines[line] = words if any(n in f" {words} " for n in needles) else None
    return lines[line]


def _lines_with(low: str, firsts: re.Pattern) -> list[str]:
    """The first LINES lines of a doc's folded text in which one of the `firsts` is, the first line
    (the entry's kind and name) left out: where a term of the query may be. Found by the words, not
    line by line, as a prompt copy has thousands of lines and few that match."""
    found, end = [], low.find("\n")
    if end < 0:
        return []
    # Looked for again after each line taken: a line may hold the word many times (a CSV's rows).
    while len(found) < LINES and (m := firsts.search(low, end + 1)):
        start = low.rfind("\n", 0, m.start()) + 1
        end = low.find("\n", m.start())
        end = len(low) if end < 0 else end
        found.append(low[start:end])
    return found
