"""Blame: for each line of a store's content, the version that brought it, when, and who wrote it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from difflib import SequenceMatcher
from itertools import chain

from . import versions
from .history import AGENT, LineOrigin, Source, Step, collapse
from .kinds import kind_of
from .models import MemoryStore
from .stores.model import Snapshot, StoreError

# Blame matches every version's lines against the next and shows a row per line: past this, the
# page and its work grow without bound (a 20 MB paste took minutes and hundreds of MB of HTML).
BLAMED = 256 * 1024


class TooLong(StoreError):
    """The content is past BLAMED characters: no blame is worked out (the API's 400)."""


def blames(snap: Snapshot) -> bool:
    """Whether blame is worked out for this content (within BLAMED characters)."""
    return len(snap.text) <= BLAMED


@dataclass(frozen=True)
class BlameLine:
    number: int  # 1-based, in the current content
    text: str
    version: str  # the first version of the unbroken run of versions that hold this line
    date: datetime | None
    author: str  # "agent", or the Tapeview user who wrote it
    source: Source | None  # None: the files do not tell where it came from
    note: str  # how the source wrote it, in words


def blame(store: MemoryStore) -> list[BlameLine]:
    """Every line of the store's current content, attributed (StoreError if the file is unreadable,
    TooLong past BLAMED characters)."""
    snap = versions.snapshot(store)
    if not blames(snap):
        raise TooLong(
            f"{store.title} is {len(snap.text):,} characters long: who wrote each line is worked out for "
            f"up to {BLAMED:,} characters (a page of that many lines is already long). Compare its "
            "versions instead, or download it."
        )
    adapter = kind_of(store)
    lines = attribute_back(adapter.history_back(store), snap, store.changed_at)
    origins = adapter.line_origins(store, snap)
    if len(origins) != len(lines):
        origins = [None] * len(lines)
    pairs = enumerate(zip(lines, origins, strict=True), 1)
    return [_line(n, text, step, origin) for n, ((text, step), origin) in pairs]


def attribute(steps: list[Step]) -> list[tuple[str, Step]]:
    """The last step's lines, each with the step that brought it (line matching as git blame does)."""
    lines: list[tuple[str, Step]] = []
    for step in steps:
        new = step.text.splitlines()
        # No autojunk: blank lines are frequent in memory files, and must still match as lines.
        matcher = SequenceMatcher(None, [text for text, _ in lines], new, autojunk=False)
        kept: list[tuple[str, Step]] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            kept += lines[i1:i2] if tag == "equal" else [(text, step) for text in new[j1:j2]]
        lines = kept
    return lines


def attribute_back(
    newest_first: Iterator[Step], snap: Snapshot, changed_at: datetime | None
) -> list[tuple[str, Step]]:
    """What attribute() makes of the collapsed steps and the content now, walking back from the newest
    step only until every line now has the version that brought it: the same matches, pair by pair
    (each version against the one before it), so a page of recent lines reads only recent versions."""
    steps = iter(newest_first)
    pending = [step] if (step := next(steps, None)) is not None else []
    for step in steps:  # the newest run of one text, and the step before it
        pending.append(step)
        if step.text != pending[0].text:
            break
    head = [s for s in pending if s.text == pending[0].text]
    if not head or head[0].text != snap.text:
        # Back to a version kept before, by the agent: no revision marks the return, the file's mtime does.
        floor = head[-1].date if head else None
        date = max(changed_at, floor) if changed_at and floor else changed_at or floor
        run = [Step(snap.version, date, snap.text)]
    else:
        run, pending = head, pending[len(head) :]
    now = snap.text.splitlines()
    where = list(range(len(now)))  # each line now, at its place in the run's text; None once attributed
    owner: list[Step | None] = [None] * len(now)
    lines = now
    for older in chain(pending, steps):
        if older.text == run[-1].text:
            run.append(older)  # one step with the run (history.collapse): the oldest's version
            continue
        earlier = older.text.splitlines()
        matcher = SequenceMatcher(None, earlier, lines, autojunk=False)
        moved: dict[int, int] = {}
        for tag, i1, _, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                moved.update((j, i1 + j - j1) for j in range(j1, j2))
        brought = collapse(run[::-1])[0]
        for n, at in enumerate(where):
            if at is not None and at not in moved:
                owner[n], where[n] = brought, None
            elif at is not None:
                where[n] = moved[at]
        if all(at is None for at in where):
            break
        run, lines = [older], earlier
    else:
        brought = collapse(run[::-1])[0]
        owner = [brought if o is None else o for o in owner]
    return [(text, step) for text, step in zip(now, owner, strict=True) if step is not None]


def _line(number: int, text: str, step: Step, origin: LineOrigin | None) -> BlameLine:
    date, source, note = step.date, step.source, step.note
    if origin is not None and step.author == AGENT:
        # The store's own record of the line (an entry's time, the session that wrote it) is finer
        # than the version's, unless it claims a time after Tapeview already saw the line.
        if origin.date is not None and (date is None or origin.date <= date):
            date = origin.date
        source, note = origin.source or source, origin.note or note
    return BlameLine(number, text, step.version, date, step.author, source, note)
