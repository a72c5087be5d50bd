"""A tape's memory zones through the index: find them, read only their entries, index what a write added."""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterator, Set
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

import orjson

from tapeview.sources import Entry, TapeNotFound
from tapeview.sources.bub import tool_calls
from tapeview.tapes import index
from tapeview.tapes import rows as index_rows
from tapeview.tapes.models import Anchor, Tape
from tapeview.tapes.pictures.tallies import state_key
from tapeview.tapes.rows import Match
from tapeview.tapes.timeline import read_rows

from .stores import bub_zone
from .stores.bub_zone import Zone, ZoneChange
from .stores.model import Snapshot

ZONE_ROWS = (Match(kinds=("anchor",), name_prefix="memory/"), Match(kinds=("event",), name_prefix="memory."))
# The agent's tools (and `,memory.*` commands) that write a new zone, by what they change.
WRITING = {"memory_save": "save", "memory_daily": "daily", "memory_clear": "clear", "memory_prune": "prune"}
CALL_ROWS = (Match(kinds=("tool_call",)), Match(kinds=("event",), names=("command",)))
EMPTY: dict = {"holder": None, "zones": [], "current": None, "changes": []}
LOOKAHEAD = 500  # entries after the last zone within which the turn that wrote it is appended


def zones_of(tape: Tape | None) -> dict:
    """The zone versions of a tape, or of its memory sidecar when the zone is kept there."""
    if tape is None:  # the store's tape left the index (its file is gone): the next look drops the store
        raise TapeNotFound("this memory zone's tape is no longer indexed")
    # The sidecar wins once it holds a zone: a zone is only ever moved there, never back.
    for holder in [*_sidecars(tape), tape]:
        if found := _found(holder):
            return found
    return EMPTY


def zone_history(tape: Tape) -> list[dict]:
    """The zones of the tape itself, then those of its memory sidecar (once the zone moved there)."""
    return [found for holder in [tape, *_sidecars(tape)] if (found := _found(holder))]


def holders(tape: Tape) -> list[Tape]:
    """The tape, then its memory sidecar, where either holds a zone line (zone_history's files)."""
    return [h for h in [tape, *_sidecars(tape)] if index_rows.of(h).any_of(*ZONE_ROWS).exists()]


def _sidecars(tape: Tape) -> list[Tape]:
    return list(tape.attachments.filter(role="sidecar", name__endswith="__sidecar__memory"))


def _found(holder: Tape) -> dict | None:
    rows = index_rows.of(holder).any_of(*ZONE_ROWS).all()
    if not rows:
        return None
    zones = bub_zone.read_zones(read_rows(holder, rows))
    return {
        "holder": holder,
        "zones": zones,
        "current": bub_zone.current(zones),
        "changes": list(reversed(bub_zone.changes(zones))),
    }


def snapshot(found: dict) -> Snapshot:
    """The zone the agent reads, as a store snapshot: its version number and canonical text."""
    zone = found["current"]
    version = str(zone.version) if zone else "missing"
    return Snapshot(version, bub_zone.zone_text(zone), found["zones"])


def refresh(tape: Tape) -> None:
    """Index what a zone write appended, to the tape or to its memory sidecar.

    Waits for another request indexing the tape at the same moment: the answer to a write (and the
    next read) must show the version just written, not the one before it.
    """
    index.refresh(tape, wait=index.AFTER_WRITE)
    for attachment in tape.attachments.all():
        index.refresh(attachment, wait=index.AFTER_WRITE)


def writers(found: dict, skip: Set[int] = frozenset()) -> dict[int, tuple[int, str]]:
    """The seal of each zone -> the position and name of the tool call (or command) that wrote it.

    A turn's zones are written while its tools run, so they come *before* its tool_call entries
    (formats/bub.md §8): the memory-writing calls after a run of zones claim them in order, each
    the first zone it fits (a save changed the long-term text, a daily a note, ...). A zone no call
    fits (the empty v1 the agent writes at session start) keeps none. `skip`: zones Tapeview wrote.
    """
    holder, zones = found["holder"], found["zones"]
    if holder is None or not zones:
        return {}
    last = max(z.seal_pos for z in zones)
    rows = index_rows.of(holder).after(zones[0].seal_pos).through(last + LOOKAHEAD)
    entries = read_rows(holder, rows.any_of(*CALL_ROWS).where(readable=True).all())
    events = [(z.seal_pos, i, None) for i, z in enumerate(zones)]
    events += [(e.pos, -1, call) for e in entries for call in _memory_writes(e)]
    found_by: dict[int, tuple[int, str]] = {}
    pending: list[int] = []
    calls_seen = False
    for pos, i, call in sorted(events, key=lambda ev: (ev[0], ev[1])):
        if call is None:
            if calls_seen:  # a later turn's zones: the calls before them are spent
                pending, calls_seen = [], False
            if zones[i].seal_pos not in skip:
                pending.append(i)
            continue
        calls_seen = True
        for k, z in enumerate(pending):
            if _fits(call[0], zones[z - 1] if z else None, zones[z]):
                found_by[zones[z].seal_pos] = (pos, call[1])
                del pending[: k + 1]
                break
    return found_by


def _memory_writes(entry: Entry) -> Iterator[tuple[str, str]]:
    """(what it changes, name) of each zone-writing call in a tool_call entry or `,memory.*` command."""
    if entry.kind == "tool_call":
        names = [call["name"] for call in tool_calls(entry)]
    else:
        data = entry.payload.get("data") if isinstance(entry.payload, dict) else None
        names = [data["name"]] if isinstance(data, dict) and isinstance(data.get("name"), str) else []
    for name in names:
        if op := WRITING.get(name.replace(".", "_")):
            yield op, name


def _fits(op: str, before: Zone | None, zone: Zone) -> bool:
    old_daily = before.daily if before else {}
    if op == "save":
        return (before.long_term if before else "") != zone.long_term
    if op == "daily":
        return any(old_daily.get(day) != note for day, note in zone.daily.items())
    if op == "prune":
        return any(day not in zone.daily for day in old_daily)
    return zone.is_empty  # clear


@dataclass(frozen=True)
class Seal:
    """A zone's memory/seal as the anchor index has it: where it is, its version, its date."""

    pos: int
    version: int
    date: datetime | None


@dataclass(frozen=True)
class VersionRow:
    """One zone of the store page's Versions table, with what it changed from the version before it."""

    zone: Zone
    change: ZoneChange
    first: bool  # no version comes before it


@dataclass(frozen=True)
class ZonePage:
    """A page of a zone's versions, newest first: `older` and `newer` are the `before` cursors of the
    pages on either side ("" for the newest page, None where there is no such page)."""

    rows: list[VersionRow]
    total: int
    older: int | None
    newer: str | int | None


def holder_of(tape: Tape | None) -> Tape | None:
    """The file that holds the zone, as zones_of chooses it; None where neither holds any zone line."""
    if tape is None:
        raise TapeNotFound("this memory zone's tape is no longer indexed")
    return next((h for h in [*_sidecars(tape), tape] if index_rows.of(h).any_of(*ZONE_ROWS).exists()), None)


class Seals(list[Seal]):
    """A holder's seals in file order, with what pages work out of them, each once."""

    @cached_property
    def current(self) -> int | None:
        """Which seal is the zone the agent reads (bub_zone.current's rule, on the seals)."""
        best: int | None = None
        for i, seal in enumerate(self):
            if seal.version > (self[best].version if best is not None else 0):
                best = i
        return best

    @cached_property
    def raising(self) -> list[int]:
        """The seals that raised the version: the zones the agent read one after the other."""
        kept, top = [], 0
        for i, seal in enumerate(self):
            if seal.version > top:
                kept.append(i)
                top = seal.version
        return kept

    @cached_property
    def rank(self) -> tuple[list[int], dict[int, int]]:
        """The seals in version order (file order within a version), and each one's place in it."""
        order = sorted(range(len(self)), key=lambda i: (self[i].version, i))
        return order, {i: r for r, i in enumerate(order)}


_KEPT: OrderedDict[str, Seals] = OrderedDict()
KEPT_HOLDERS = 32  # holders whose seals this process keeps


def seals(holder: Tape) -> Seals:
    """Every seal of a holder with a version, in file order: three narrow columns of the anchor rows,
    no entry read (a zone's contents are read only for the versions a page shows). Kept in this
    process while the holder's index stays as it is (a seal, once indexed, stays where it is), as
    objects rather than in the cache: unpickling 5,000 of them cost more than the page."""
    key = state_key("zone-seals", holder)
    if (kept := _KEPT.get(key)) is not None:
        _KEPT.move_to_end(key)
        return kept
    found = Anchor.objects.filter(tape=holder, name=bub_zone.SEAL).order_by("pos")
    out = Seals()
    for pos, date, state in found.values_list("pos", "date", "state"):
        if (version := _state_version(state)) is not None:
            out.append(Seal(pos, version, date))
    _KEPT[key] = out
    while len(_KEPT) > KEPT_HOLDERS:
        _KEPT.popitem(last=False)
    return out


def read_at(holder: Tape, found: list[Seal], wanted: Set[int]) -> dict[int, Zone]:
    """The zones of these seals (indices into `found`), by index: each run of neighbours is read
    from its first zone's open to its last seal, so only those versions' entries are read."""
    out: dict[int, Zone] = {}
    ordered = sorted(i for i in wanted if 0 <= i < len(found))
    runs: list[list[int]] = []
    for i in ordered:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    for run in runs:
        first, last = found[run[0]], found[run[-1]]
        rows = index_rows.of(holder).any_of(*ZONE_ROWS).starting(_open_of(holder, first)).through(last.pos)
        by_seal = {z.seal_pos: z for z in bub_zone.read_zones(read_rows(holder, rows.all()))}
        out.update((i, by_seal[found[i].pos]) for i in run if found[i].pos in by_seal)
    return out


def page(holder: Tape, found: Seals, before: int | None, limit: int) -> ZonePage:
    """The `limit` versions sealed before position `before` (None: the newest), newest first, each
    with its change from the version before it (the next lower version, as bub_zone.changes has it)."""
    end = len(found) if before is None else bisect_left(found, before, key=lambda s: s.pos)
    listed = list(range(max(0, end - limit), end))[::-1]
    order, rank = found.rank
    previous = {i: order[rank[i] - 1] for i in listed if rank[i] > 0}
    zones = read_at(holder, found, {*listed, *previous.values()})
    rows = []
    for i in listed:
        if i not in zones:
            continue  # a seal with no open of its version: not a zone the agent reads
        before_zone = zones.get(previous[i]) if i in previous else None
        pair = [before_zone, zones[i]] if before_zone else [zones[i]]
        rows.append(VersionRow(zones[i], bub_zone.changes(pair)[-1], rank[i] == 0))
    older = found[listed[-1]].pos if listed and listed[-1] > 0 else None
    top = listed[0] if listed else end - 1
    newer: str | int | None = None
    if top + 1 < len(found):
        newer = found[top + limit + 1].pos if top + limit + 1 < len(found) else ""
    return ZonePage(rows, len(found), older, newer)


def _open_of(holder: Tape, seal: Seal) -> int:
    """The nearest memory/open of the seal's version before it: where its zone starts."""
    opens = Anchor.objects.filter(tape=holder, name=bub_zone.OPEN, pos__lt=seal.pos).order_by("-pos")
    for pos, state in opens.values_list("pos", "state")[:16]:
        if _state_version(state) == seal.version:
            return pos
    return 1  # not among the nearest: read from the start rather than miss it


def _state_version(state: str) -> int | None:
    try:
        parsed = orjson.loads(state) if state else None
    except orjson.JSONDecodeError:  # a preview cut short: not a seal's small state
        return None
    version = parsed.get("version") if isinstance(parsed, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else None
