"""A session's handoff lineage: its phase anchors with their whole state, archives first, each diffed.

The index keeps a bounded preview of each anchor's state; the whole state is read from the file
by the anchor's offset (one small read per anchor, and only for a preview that was cut).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

import orjson
from django.conf import settings

from tapeview.sources import TapeNotFound

from . import index
from . import rows as index_rows
from .models import STATE_PREVIEW, Anchor, Tape
from .phase_tally import anchor_state
from .timeline import read_rows

MAX_WORDS = 5_000  # of a summary, diffed word by word; past it the rest is one word
# A word with the spaces before it: a matched space alone would cut a changed sentence into shreds.
_WORDS = re.compile(r"\s*\S+|\s+")


@dataclass
class Link:
    tape: Tape
    anchor: Anchor
    state: Any  # the anchor's whole state; None where it has none
    diff: dict | None  # from the link before; None for the first
    place: int = 0  # the tape's place in the chain (tapes.lineage.chain)


def chain(tape: Tape) -> list[Tape]:
    """A session's tapes in lineage order: its archives oldest first (by name: time), then itself."""
    archives = sorted(tape.attachments.filter(role="archive"), key=lambda a: a.name)
    for archive in archives if settings.TAPEVIEW_WEB_INDEXES else ():
        index.refresh(archive)  # an archive is written once: indexed on first sight, then a no-op
    return [*archives, tape]


def links(tape: Tape, after: tuple[int, int] | None = None, limit: int = 50) -> tuple[list[Link], bool]:
    """Up to `limit` links after `after` = (tape's place in the chain, anchor pos); whether more follow.

    Each link's diff is from the link before it, on this page or the last one before it.
    """
    tapes = chain(tape)
    at, pos = after or (0, 0)
    picked: list[tuple[int, Anchor]] = []
    previous: tuple[int, Anchor] | None = None
    for i, t in enumerate(tapes):
        if i < at:
            continue
        anchors = Anchor.objects.filter(tape=t, phase=True).order_by("pos")
        if i == at and after is not None:
            anchors = anchors.filter(pos__gt=pos)
        picked += [(i, a) for a in anchors[: limit + 1 - len(picked)]]
        if len(picked) > limit:
            break
    more, picked = len(picked) > limit, picked[:limit]
    if picked and after is not None:
        previous = _before(tapes, *after)
    states = _states_of(tapes, [p for p in ([previous] if previous else []) + picked])
    out: list[Link] = []
    last = states.get(_key(previous)) if previous else None
    has_last = previous is not None
    for i, anchor in picked:
        state = states.get((i, anchor.pos))
        out.append(Link(tapes[i], anchor, state, diff_states(last, state) if has_last else None, i))
        last, has_last = state, True
    return out, more


def _key(item: tuple[int, Anchor]) -> tuple[int, int]:
    return item[0], item[1].pos


def _before(tapes: list[Tape], at: int, pos: int) -> tuple[int, Anchor] | None:
    """The link at (at, pos) itself: the last one the previous page showed."""
    found = Anchor.objects.filter(tape=tapes[at], phase=True, pos=pos).first() if at < len(tapes) else None
    return (at, found) if found else None


def _states_of(tapes: list[Tape], items: list[tuple[int, Anchor]]) -> dict[tuple[int, int], Any]:
    by_tape: dict[int, list[Anchor]] = {}
    for i, anchor in items:
        by_tape.setdefault(i, []).append(anchor)
    return {(i, pos): s for i, anchors in by_tape.items() for pos, s in states(tapes[i], anchors).items()}


def states(tape: Tape, anchors: list[Anchor]) -> dict[int, Any]:
    """The whole state of each anchor by pos: its preview where that is whole, else read from the file."""
    found: dict[int, Any] = {}
    cut: list[int] = []
    for anchor in anchors:
        if len(anchor.state) >= STATE_PREVIEW:
            cut.append(anchor.pos)
        else:
            found[anchor.pos] = orjson.loads(anchor.state) if anchor.state else None
    if cut:
        rows = index_rows.of(tape).at(cut)
        try:
            entries = read_rows(tape, rows)
        except TapeNotFound:
            entries = []
        for e in entries:
            found[e.pos] = anchor_state(e)
    return found


def diff_states(before: Any, after: Any) -> dict:
    """Keys added, removed and changed from one state to the next, and the summary diffed by words."""
    old = before if isinstance(before, dict) else {}
    new = after if isinstance(after, dict) else {}
    summary = None
    a, b = old.get("summary"), new.get("summary")
    if (isinstance(a, str) or isinstance(b, str)) and a != b:
        summary = word_diff(a if isinstance(a, str) else "", b if isinstance(b, str) else "")
    return {
        "added": sorted(k for k in new if k not in old),
        "removed": sorted(k for k in old if k not in new),
        "changed": sorted(k for k in new if k in old and new[k] != old[k]),
        "summary": summary,
    }


def word_diff(a: str, b: str) -> list[dict]:
    """`[{"op": "equal" | "delete" | "insert", "text"}]`: what turns `a` into `b`, word by word."""
    old, new = _words(a), _words(b)
    ops: list[dict] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _add(ops, "equal", "".join(old[i1:i2]))
        else:
            _add(ops, "delete", "".join(old[i1:i2]))
            _add(ops, "insert", "".join(new[j1:j2]))
    return ops


def _words(text: str) -> list[str]:
    words = _WORDS.findall(text)
    return words[:MAX_WORDS] + ["".join(words[MAX_WORDS:])] if len(words) > MAX_WORDS else words


def _add(ops: list[dict], op: str, text: str) -> None:
    if not text:
        return
    if ops and ops[-1]["op"] == op:
        ops[-1]["text"] += text
    else:
        ops.append({"op": op, "text": text})
