"""A tape's context budget: tokens since its last anchor against its model's window; where to hand off.

The tokens are the prompt tokens the agent last reported since the anchor (kept by the index), or
else an estimate: the context the agent's own rules build from the entries after the anchor,
counted with a BPE tokenizer. The estimate reads at most the newest CAP_ROWS entries (CAP_BYTES)
and tokenizes at most CAP_CHARS characters: what it leaves (older entries, a line too big to parse,
text past the cap) is priced by its size (estimate.py), and the estimate is marked `capped`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from tapeview.sources import Entry

from . import archive, handoff, pictures, timeline, turn_end, windows
from . import rows as index_rows
from .estimate import CAP_CHARS, Estimate, read_context
from .models import Tape
from .phase_tally import usage
from .rows import Rows

CAP_ROWS = 2_000
CAP_BYTES = 4 * 1024 * 1024
TURN_EVENTS = ("loop.start", "run")
# moved_by: where a turn starts or ends (formats/bub.md §2.2, §4: a user message starts one elsewhere).
# Bub 0.2 ends turns with `loop.step.finish`, `loop.result` (bub_tail.is_terminal): mid_turn follows.
TURN_STARTS_ENDS = {
    ("event", n) for n in ("loop.start", "run", "loop.step", "command", "loop.step.finish", "loop.result")
}
TURN_STARTS_ENDS.add(("message", "user"))
TURNS_SECONDS = 600  # how long the turn starts and reports read are kept (_turns)


@dataclass
class Budget:
    tokens_since_anchor: int | None
    window: int | None  # None: the model (or its window) is unknown
    source: str  # "reported" by the agent, or "estimated" here
    model: str
    anchor_pos: int | None = None
    overflowed: bool = False
    capped: bool = False
    encoding: str = ""  # what an estimate counted with
    suggested_handoff_pos: int | None = None
    suggested_tokens: int | None = None
    # The tape's last entry ends no turn: a handoff waits for the turn's end (handoff.append_state).
    mid_turn: bool = False
    # Bytes past the last indexed line end the tape (an unfinished line: the agent mid-write): mid_turn too.
    writing: bool = False
    # Where the window comes from: "config" (the agent's own, nanobot's contextWindowTokens), "model"
    # (the known windows by model, or TAPEVIEW_MODEL_WINDOWS), "" (unknown).
    window_source: str = ""

    @property
    def ratio(self) -> float | None:
        if not self.window or self.tokens_since_anchor is None:
            return None
        return self.tokens_since_anchor / self.window

    @property
    def warn(self) -> bool:
        return self.ratio is not None and self.ratio >= settings.TAPEVIEW_BUDGET_WARN

    @property
    def over(self) -> bool:
        """Past the window: the model's next call cannot take this context (for the page and API)."""
        return self.ratio is not None and self.ratio >= 1

    @property
    def threshold(self) -> float:
        return settings.TAPEVIEW_BUDGET_WARN


def stored(tape: Tape) -> Budget:
    """What the index knows without reading the file (the session index's column): reported tokens only."""
    model = tape.model or tape.configured_model
    window, source = window_of(tape)
    return Budget(
        tape.context_tokens,
        window,
        "reported" if tape.context_tokens is not None else "",
        model,
        tape.last_anchor_pos,
        tape.overflowed,
        window_source=source,
    )


def window_of(tape: Tape) -> tuple[int | None, str]:
    """The tape's context window and where it comes from: the one the agent's config sets first (what
    the agent itself compacts against), else the known window of its model."""
    if tape.configured_window:
        return tape.configured_window, "config"
    window = windows.window(tape.model or tape.configured_model)
    return window, "model" if window else ""


def measure(tape: Tape, index: Rows | None = None) -> Budget:
    """The budget now, estimated where the agent reports nothing, and the suggested handoff point;
    asked of `index` (the page's snapshot of the tape's rows) when given.

    The suggestion is for tapes that take a handoff, and needs the model's window. Kept in the
    cache until the tape's index changes: it reads and counts the tape's newest entries.
    """
    # Everything it reads besides the rows: the fields the indexer keeps, and the settings.
    kept = (tape.kind, tape.role, tape.model, tape.context_tokens, tape.last_anchor_pos, tape.overflowed)
    model = tape.model or tape.configured_model
    also = (*kept, model, window_of(tape), windows.encoding(model), (CAP_ROWS, CAP_BYTES, CAP_CHARS))
    return pictures.cached("budget", tape, lambda: _measure(tape, index), also)


def moved_by(tape: Tape, appended: list[Entry]) -> bool:
    """Whether entries the agent appended call for measuring again on the live end: always when it
    reports its prompts (the index keeps them: cheap), else (an estimate reads up to CAP_ROWS
    entries) at an anchor, or where a turn starts or ends."""
    turns = ((e.kind, e.name) in TURN_STARTS_ENDS for e in appended)
    return tape.context_tokens is not None or any(e.is_anchor for e in appended) or any(turns)


def _measure(tape: Tape, index: Rows | None) -> Budget:
    budget = stored(tape)
    start = tape.last_anchor_pos or 0
    # An anchor that stays a message (nanobot's summary checkpoint) is the first of its context.
    anchor = (index or index_rows.of(tape)).at([start]) if start and tape.kind != "bub" else []
    start -= any(row.kind != "anchor" for row in anchor)
    boundary = archive.archive_boundary(tape, index)
    if boundary:  # nanobot replays only what it has not archived (formats/nanobot.md §2.5)
        start = max(start, boundary - 1)
    suggest = budget.window is not None and not handoff.refusal(tape)
    estimate = None
    if budget.tokens_since_anchor is None:
        entries, unread = read_context(tape, start, index, CAP_ROWS, CAP_BYTES)
        estimate = Estimate(tape.kind, entries, windows.encoding(budget.model), unread)
        budget.tokens_since_anchor, budget.source = estimate.total, "estimated"
        budget.encoding, budget.capped = estimate.encoding, estimate.capped
    if suggest and budget.window:
        # Mid-turn, the tape's end is no turn boundary: the last is where the last turn ended (if
        # found), priced as it was there; `window` prices a place never within half of it.
        ended, half, now = turn_end.last_turn_end(tape, start, index), budget.window // 2, None
        # Bytes past the last indexed line (an unfinished one: the agent mid-write) end no turn either:
        # a handoff now is refused as busy (bub_tail.read_tail), so it waits as it does mid-turn.
        budget.writing = tape.pending_bytes > 0
        end, budget.mid_turn = ended.pos or 0, ended.mid_turn or budget.writing
        if estimate is None:
            # The agent reports each call's prompt (Bub's `run`): its turn starts and reports are enough.
            turns = _turns(tape, start, index)
            if ended.pos is not None:
                now = _reported_by(turns, end) if ended.mid_turn else budget.tokens_since_anchor
            fit = last_fit(turns, budget.window if now is None else now, end, half)
        else:
            if ended.pos is not None:
                now = estimate.before(end + 1) if ended.mid_turn else budget.tokens_since_anchor
            points = turn_boundaries(estimate.entries, estimate, budget.window if now is None else now, end)
            fits = [(pos, tokens) for pos, tokens in points if tokens <= half]
            fit = fits[-1] if fits else None
        if fit:
            budget.suggested_handoff_pos, budget.suggested_tokens = fit
    return budget


def _tail(
    tape: Tape, start: int, names: tuple[str, ...] = (), index: Rows | None = None
) -> tuple[list[Entry], bool]:
    """The newest entries after `start` (only events of these names, if given), at most CAP_ROWS and
    CAP_BYTES of them; whether that is all."""
    rows = (index or index_rows.of(tape)).after(start)
    if names:
        rows = rows.where(kinds=("event",), names=names)
    newest = rows.tail(CAP_ROWS + 1)[::-1]
    capped = len(newest) > CAP_ROWS
    kept, size = [], 0
    for row in newest[:CAP_ROWS]:
        size += row.length
        if size > CAP_BYTES:
            capped = True
            break
        kept.append(row)
    entries = sorted(timeline.read_rows(tape, kept), key=lambda e: e.pos)
    # An entry too big to parse is not counted: the estimate is a lower bound then.
    whole = [e for e in entries if not e.truncated]
    return whole, capped or len(whole) < len(entries)


Turns = tuple[list[int], list[str], list[str], list[int | None]]  # pos, kind, name, prompt tokens


def _turns(tape: Tape, start: int, index: Rows | None) -> Turns:
    """The turn starts and reports after `start` that `_tail(tape, start, TURN_EVENTS)` reads, as
    what last_fit reads of them. Kept across appends: those read before (without their payloads)
    are kept by the tape's index generation (as `index` read it: pictures.generation_of), only
    the rows past them read."""
    gen = pictures.generation_of(tape, index)
    if gen is None:
        return _columns(_tail(tape, start, names=TURN_EVENTS, index=index)[0])
    also = (start, TURN_EVENTS, CAP_ROWS, CAP_BYTES, "pos length kind name prompt")
    key = pictures.prefix_key("budget-turns", tape, gen, also)
    # The last position read, and columns of the newest rows read (at most CAP_ROWS): a few plain
    # lists, not thousands of objects, as the cache pickles them at every read.
    last, seen = cache.get(key) or (start, ([], [], [], [], []))
    rows = (index or index_rows.of(tape)).after(last).where(kinds=("event",), names=TURN_EVENTS)
    new = rows.tail(CAP_ROWS + 1)
    wanted, size = 0, 0  # the newest of them that the caps may keep
    for row in reversed(new[-CAP_ROWS:]):
        size += row.length
        if size > CAP_BYTES:
            break
        wanted += 1
    if wanted < len(new):
        seen = ([], [], [], [], [])  # older rows than those left unread: never kept again
    read = new[len(new) - wanted :]
    if read:
        entries = {e.pos: e for e in timeline.read_rows(tape, read)}
        added = zip(*(_slim(r.pos, r.length, entries.get(r.pos)) for r in read), strict=True)
        seen = tuple((old + list(more))[-CAP_ROWS:] for old, more in zip(seen, added, strict=True))
    if new and (pictures.is_snapshot(index) or pictures.generation(tape) == gen):
        cache.set(key, (new[-1].pos, seen), TURNS_SECONDS)
    pos, lengths, kind, name, prompt = seen
    first, size = len(pos), 0  # the newest rows within CAP_BYTES
    while first and size + lengths[first - 1] <= CAP_BYTES:
        first -= 1
        size += lengths[first]
    return pos[first:], kind[first:], name[first:], prompt[first:]


def _reported_by(turns: Turns, end: int) -> int | None:
    """The prompt tokens last reported at or before `end` in these columns (as last_fit reads them)."""
    found = [
        t
        for p, k, t in zip(turns[0], turns[1], turns[3], strict=True)
        if p <= end and t is not None and k != "metadata"
    ]
    return found[-1] if found else None


def _slim(pos: int, length: int, e: Entry | None) -> tuple:
    """A row of _turns' columns; kind "" for an entry too big to parse (never a start or a report)."""
    if e is None or e.truncated:
        return (pos, length, "", "", None)
    return (pos, length, e.kind, e.name, e.prompt_tokens)


def _columns(entries: list[Entry]) -> Turns:
    return tuple([getattr(e, f) for e in entries] for f in ("pos", "kind", "name", "prompt_tokens"))


def last_fit(turns: Turns, now: int, end: int, half: int) -> tuple[int, int] | None:
    """The last of turn_boundaries' points (without an estimate) with at most `half` tokens, worked
    out over columns as they are kept (_turns), without an Entry, or a list of points, per row."""
    pos, kind, name, prompt = turns
    bub = ("event", "loop.start")  # as turn_boundaries: Bub's turns, or a user message's
    start = bub if bub in zip(kind, name, strict=True) else ("message", "user")
    fit, reported, turns_seen = None, None, 0
    for p, k, n, tokens in zip(pos, kind, name, prompt, strict=True):
        starts = (k, n) == start
        if starts and turns_seen and reported is not None and reported <= half:
            fit = (p - 1, reported)
        turns_seen += starts
        if tokens is not None and k != "metadata":  # phase_tally.usage: a report, but not a snapshot
            reported = tokens
    return (end, now) if turns_seen and now <= half else fit


def turn_boundaries(
    entries: list[Entry], estimate: Estimate | None, now: int, end: int
) -> list[tuple[int, int]]:
    """Each place between two turns, and the end (`end`, with `now` tokens), with the context's
    tokens there: (the pos a handoff would follow, tokens).

    A turn starts at Bub's `loop.start` event, or at a user message in a family without one. The
    tokens are the last prompt tokens reported before the place, else the estimate (without one,
    a place with no report before it is left out).
    """
    bub_turns = any(e.kind == "event" and e.name == "loop.start" for e in entries)
    points: list[tuple[int, int]] = []
    reported: int | None = None
    turns = 0
    for e in entries:
        starts = (e.kind, e.name) == (("event", "loop.start") if bub_turns else ("message", "user"))
        if starts and turns:
            tokens = reported if reported is not None or estimate is None else estimate.before(e.pos)
            if tokens is not None:
                points.append((e.pos - 1, tokens))
        turns += starts
        used = usage(e)
        if used is not None and e.prompt_tokens is not None:
            reported = used[0]
    if turns:
        points.append((end, now))
    return points
