"""The indexer's bulk path through a Bub tape in compiled code (tapes/_lane.c), a block at a time.

The compiled lane takes the lines it is sure of, as the Python lane (tapes.fastlane) would count
them (and, once the tape has overflowed, its errors, as the full path counts them), without a
Python object per line, and stops at any other: that line goes down the full path, then the
compiled lane goes on. An anchor in the form Bub writes it reads itself, and hands over what
fastlane.anchor would read of it (Lane.anchor(): the real tape has an anchor every 24 lines, and
reading each in Python was a tenth of its cold index). The lines it took join the batch when the
batch is written (packing.Batch.lane), and their counts join the tape and its phase before
anything else reads them (`settle`), as fastlane.Counted's do.

Where the module is not built (a source tree without `make setup`), the Python lane reads every line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import suppress
from functools import cache
from pathlib import Path

import orjson

from tapeview.sources import bub
from tapeview.sources.bub_lines import big_line
from tapeview.sources.model import DISPLAY_PREVIEW_BYTES, SCAN_PARSE_LIMIT, Entry

from . import costs, fastlane
from .fastlane import NOT_PARSED
from .packing import CONTEXT

try:
    from . import _lane as native
except ImportError:  # pragma: no cover - `make setup` builds it
    native = None

# Lane.take() stopped at a line that is the Python lane's, the batch is full, or at an anchor it read.
DECLINED, FULL, ANCHOR = 1, 2, 3
log = logging.getLogger("tapeview.index")


def read(path: Path, start: int, first_pos: int) -> Iterable[tuple]:
    """What `index_lines` takes from a tape: its blocks of lines, or its lines (bub.lines) without
    the compiled lane."""
    if native is None:
        _not_built()
        return bub.lines(path, start, first_pos)
    return Blocks(path, start, first_pos)


class Blocks:
    """A tape's blocks of lines from byte `start` on (bub.blocks), the first line at `first_pos`."""

    def __init__(self, path: Path, start: int, first_pos: int) -> None:
        self.path, self.start, self.first_pos = path, start, first_pos

    def __iter__(self) -> Iterator[tuple[int, bytes, int]]:
        return bub.blocks(self.path, self.start)


@cache
def _not_built() -> None:
    log.warning(
        "the indexer's compiled lane (tapeview/tapes/_lane.c) is not built: Bub tapes are indexed in "
        "Python, several times slower; `make setup` (or `pip install -e .` with a C compiler) builds it"
    )


def index_lines(run: fastlane.Run, items: Blocks | Iterable[tuple]) -> None:
    """Index what `read` gave, in file order."""
    if native is None:
        fastlane.index_lines(run, items)
        return
    lane, pos = native.Lane(), items.first_pos
    for offset, data, end in items:
        if end < 0:  # a line too long to read whole: the Entry its head makes
            _python(run, lane, pos, offset, big_line(data, pos, offset, -end))
            pos += 1
            continue
        at = 0
        while at < end:
            if run.tally.current is not None:  # (before the first entry, the full path starts a phase)
                at, pos, stopped = _take(run, lane, data, at, pos, offset)
                if stopped == FULL:
                    settle(run, lane)
                    run.flush()
                    continue
                if stopped != DECLINED:
                    break
            stop = data.index(b"\n", at)
            line, length, where = data[at:stop], stop + 1 - at, offset + at
            if length > SCAN_PARSE_LIMIT:
                _python(run, lane, pos, where, big_line(line[:DISPLAY_PREVIEW_BYTES], pos, where, length))
            elif line.strip():
                _python(run, lane, pos, where, line)
            at, pos = stop + 1, pos + 1
    settle(run, lane)
    run.rows.lane = lane


def _take(
    run: fastlane.Run, lane: object, data: bytes, at: int, pos: int, offset: int
) -> tuple[int, int, int]:
    """Lane.take() from `at` on, the anchors it reads on the way counted (as fastlane.anchor counts
    them), until it stops otherwise: (at, pos, stopped)."""
    labels, size = run.wants_label(), run.size  # (an anchor never changes what the label wants)
    while True:
        rows = run.rows  # (a new one after an anchor that filled the batch)
        rows.lane = lane
        at, pos, stopped = lane.take(data, at, pos, offset, size - len(rows), labels, run.tape.overflowed)
        if stopped != ANCHOR:
            return at, pos, stopped
        settle(run, lane)
        stop, eid, name, when, date, context, state, state_end = lane.anchor()
        # The lane read the whole line as orjson does: its state alone reads the same.
        state = orjson.loads(data[state:state_end]) if state >= 0 else None
        fastlane.count_anchor(
            run, pos, offset + at, stop - at, eid, name, when, date, context * CONTEXT, state
        )
        at, pos = stop, pos + 1


def _python(run: fastlane.Run, lane: object, pos: int, offset: int, line: bytes | Entry) -> None:
    """One line the compiled lane leaves, once its counts are in: almost always an anchor (counted by
    fastlane.anchor, as the full path would) or an error; any other line goes down the full path,
    which reads it exactly as the agent reads it."""
    settle(run, lane)
    if type(line) is not bytes:
        run.full(pos, offset, line, NOT_PARSED)
        return
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        obj = NOT_PARSED
    if obj is NOT_PARSED or not fastlane.anchor(run, pos, offset, line, obj):
        run.full(pos, offset, line, obj)


def settle(run: fastlane.Run, lane: object) -> None:
    """The counts of the lines the lane took since it last settled, into the tape and its phase:
    as fastlane.Counted.settle and fastlane._model_and_usage count them (and the full path an
    error: index._account, PhaseTally.add), a run at a time."""
    counts = lane.settle()
    if counts is None:
        return
    n, low, high, calls, last, roles, usage, model, errors, spent = counts
    tape, tally = run.tape, run.tally
    fastlane.counted(tape, tally, n, low, high, last)
    phase = tally.current
    phase.tool_calls += calls
    if errors:  # (only once the tape has overflowed: no error's words need reading for it)
        tape.errors += errors
        phase.errors += errors
    for role, count in roles.items():
        phase.roles[role[:40]] = phase.roles.get(role[:40], 0) + count
    if model is not None:
        phase.model = tape.model = model[:200]
    if usage is not None:
        _, tokens, prompt, completion, cached, last_prompt, last_cached, context = usage
        tape.tokens = (tape.tokens or 0) + tokens
        if last_prompt is not None:
            tape.last_prompt_tokens, tape.last_cached_tokens = last_prompt, last_cached
        tape.context_tokens = context  # the prompt of the latest call since the last anchor
        phase.prompt_tokens = (phase.prompt_tokens or 0) + prompt
        phase.completion_tokens = (phase.completion_tokens or 0) + completion
        phase.cached_tokens = (phase.cached_tokens or 0) + cached
        costs.add(tape, phase, prompt, completion, cached, usage[0])  # one model's: the lane stops at another
    for raw in spent or ():  # Bub-next steps' metrics.cost, as JSON text: a number, or nothing reported
        with suppress(orjson.JSONDecodeError):  # (1e400: infinity, which is not reported either way)
            costs.report(tape, phase, orjson.loads(raw))
