"""Blame: for each line of a store's content, the version that brought it, when, and who wrote it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from difflib import SequenceMatcher

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
    steps = collapse(adapter.history(store))
    if not steps or steps[-1].text != snap.text:
        # Back to a version kept before, by the agent: no revision marks the return, the file's mtime does.
        floor = steps[-1].date if steps else None
        date = max(store.changed_at, floor) if store.changed_at and floor else store.changed_at or floor
        steps.append(Step(snap.version, date, snap.text))
    lines = attribute(steps)
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


def _line(number: int, text: str, step: Step, origin: LineOrigin | None) -> BlameLine:
    date, source, note = step.date, step.source, step.note
    if origin is not None and step.author == AGENT:
        # The store's own record of the line (an entry's time, the session that wrote it) is finer
        # than the version's, unless it claims a time after Tapeview already saw the line.
        if origin.date is not None and (date is None or origin.date <= date):
            date = origin.date
        source, note = origin.source or source, origin.note or note
    return BlameLine(number, text, step.version, date, step.author, source, note)
