"""The indexer's bulk path through a tape in Bub's next format: most lines only count.

As tapes.fastlane does for 0.5.1 lines: a line that changes nothing but counts (a message, a
system prompt, an operation event that is no error) is parsed here, in one loop over local names,
without an Entry, and a run of such lines is counted at once (fastlane.Counted). Every other line
(anchors, errors, usage, a label still wanted, anything the checks here are not sure of) goes to the
indexer's full path, which reads it exactly as Bub's next reader does (sources.bub_next_lines).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tapeview.sources import bub

from . import fastlane


def read(path: Path, start: int, first_pos: int) -> Iterable[tuple]:
    """The tape's (pos, offset, line) from byte `start` on (sources.bub.lines)."""
    return bub.lines(path, start, first_pos)


def index_lines(run: fastlane.Run, lines: Iterable[tuple]) -> None:
    """Index (pos, offset, line) in file order."""
    for pos, offset, raw in lines:
        run.full(pos, offset, raw, fastlane.NOT_PARSED)
