"""What the timeline draws: entries as items, grouped in turns, the loop's bookkeeping folded."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tapeview.sources import Entry, bub_next, nanobot
from tapeview.sources.bub_next_lines import FORMAT as NEXT_FORMAT
from tapeview.sources.model import AUTOMATION, CHECKPOINT

from . import copy_reader, rows
from .models import Tape
from .rows import Rows

# Events that stay cards of their own when the operational events around them fold away: what a
# person did (a command, a model switch), not the agent loop's bookkeeping.
SHOWN_EVENTS = frozenset({"command", "model_switch"})
# What begins a turn in Bub's next format, where the user's message is written after the tools ran
# (formats/bub-next.md §5): the loop's start, or a comma command. Its lines after carry `bubturnid`.
NEXT_TURN_STARTS = ("loop.start", "command")


@dataclass
class Item:
    """One entry as the timeline shows it."""

    entry: Entry
    calls: list[dict] = field(default_factory=list)  # for tool_call: each call with its result
    results: list[dict] = field(default_factory=list)  # for tool_result: each result with its call
    call_pos: int | None = None  # for tool_result: where its call is
    result_pos: int | None = None  # for tool_call: where its results are
    folded: bool = False  # a tool_result already shown with its call on this page
    boundary: str = ""  # a family boundary drawn before this entry


@dataclass
class Block:
    """What the timeline draws as one: a turn, a fold of operational events, or one entry."""

    kind: str  # "turn", "fold" or "item"
    item: Item | None = None  # of an "item"
    parts: list[Block] = field(default_factory=list)  # of a turn or a fold: what it holds, in order
    number: int = 0  # of a turn: it starts at the number-th user message of the tape
    continued: bool = False  # of a turn: begun before this page, or before an anchor

    @property
    def positions(self) -> list[int]:
        if self.item is not None:
            return [self.item.entry.pos]
        return [pos for part in self.parts for pos in part.positions]


def turn_before(tape: Tape, pos: int, index: Rows | None = None) -> tuple[int, bool]:
    """How many turns of the user's began before `pos`, and whether the last of them is still
    unanswered there.

    A row the agent wrote in the user's place (`Entry.aside`: nanobot's summary checkpoints, its
    cron and trigger turns) is no turn; after an automation row, what follows is that run's.
    """
    if tape.line_format == NEXT_FORMAT:
        began = (index or rows.of(tape)).before(pos).where(kinds=("event",), names=NEXT_TURN_STARTS)
        count = began.count()
        return count, count > 0
    messages = (index or rows.of(tape)).before(pos).where(kinds=("message",), readable=True)
    users = messages.where(names=("user",))
    asides = _asides(tape, users) if tape.kind == "nanobot" else {}  # the one family that writes them
    checkpoints = sum(aside == CHECKPOINT for aside in asides.values())
    said = messages.where(names=("user", "assistant")).tail(checkpoints + 1)
    # A checkpoint is passed over: the turn it falls in goes on after it.
    last = next((row for row in reversed(said) if asides.get(row.pos) != CHECKPOINT), None)
    unanswered = last is not None and last.name == "user" and last.pos not in asides
    return users.count() - len(asides), unanswered


def _asides(tape: Tape, users: Rows) -> dict[int, str]:
    """The rows among `users` that the agent wrote in the user's place, by pos: read from the file,
    as the index keeps only their role."""
    spans = [(row.pos, row.offset, row.length) for row in users.all()]
    if not spans:
        return {}
    with copy_reader.reading(tape.host):  # another host's file: its copy in the database
        return nanobot.asides(Path(tape.path), spans)


def arrange(items: list[Item], turns: int, unanswered: bool) -> list[Block]:
    """The items in turns (a user message through the assistant's answer, and the operational
    events just after it), the runs of operational events inside a turn folded; `turns` began
    before the first item, the last of them `unanswered` so far.

    An anchor is a phase divider: it closes the turn's box, and what follows in the same turn is
    drawn as the turn continued. So is a row the agent wrote in the user's place (`Entry.aside`),
    drawn on its own, no turn: after a checkpoint the turn goes on; after an automation row (a
    cron or trigger run) what follows is that run's, drawn outside the user's turns.
    """
    if any(bub_next.is_next(item.entry) for item in items):
        return _arrange_by_turn(items, turns, unanswered)
    out: list[Block] = []
    turn: Block | None = None
    answered = False  # the open box has its answer: only its trailing operational events join it
    for item in items:
        e = item.entry
        alone = e.anchor_only or (e.readable and bool(e.aside))
        starts = e.starts_turn
        if turn is not None and (starts or alone or (answered and not _folds(item))):
            out.append(turn)
            turn, answered = None, False
        if alone:
            out.append(Block("item", item))
            unanswered = unanswered and e.aside != AUTOMATION
            continue
        if starts:
            turns += 1
            unanswered = True
            turn = Block("turn", number=turns)
        elif turn is None and unanswered:
            turn = Block("turn", number=turns, continued=True)
        if turn is None:
            out.append(Block("item", item))
        else:
            _add(turn.parts, item)
        if turn is not None and e.readable and e.kind == "message" and e.name == "assistant":
            answered, unanswered = True, False
    if turn is not None:
        out.append(turn)
    return out


def _arrange_by_turn(items: list[Item], turns: int, open_before: bool) -> list[Block]:
    """`arrange` for Bub's next format: a turn runs from its loop's start (or comma command) to the
    next, its lines told apart by `bubturnid`; an anchor is a phase divider, as in `arrange`."""
    out: list[Block] = []
    turn: Block | None = None
    turn_id: str | None = None
    for item in items:
        e = item.entry
        here = e.meta.get("bubturnid") if e.readable else None
        starts = e.readable and e.kind == "event" and e.name in NEXT_TURN_STARTS
        starts = starts or (isinstance(here, str) and turn_id is not None and here != turn_id)
        if turn is not None and (starts or e.anchor_only):
            out.append(turn)
            turn = None
        if e.anchor_only:
            out.append(Block("item", item))
            continue
        if starts:
            turns += 1
            open_before, turn_id = True, None
            turn = Block("turn", number=turns)
        elif turn is None and open_before:
            turn = Block("turn", number=turns, continued=True)
        if isinstance(here, str):
            turn_id = here
        if turn is None:
            out.append(Block("item", item))
        else:
            _add(turn.parts, item)
    if turn is not None:
        out.append(turn)
    return out


def _folds(item: Item) -> bool:
    """An operational event: the agent loop's bookkeeping, folded under its turn."""
    e = item.entry
    return (
        e.kind == "event"
        and e.readable
        and not (e.truncated or e.is_error or item.boundary or e.meta.get("folded"))
        and e.name not in SHOWN_EVENTS
    )


def _add(parts: list[Block], item: Item) -> None:
    if not _folds(item):
        parts.append(Block("item", item))
    elif parts and parts[-1].kind == "fold":
        parts[-1].parts.append(Block("item", item))
    else:
        parts.append(Block("fold", parts=[Block("item", item)]))
