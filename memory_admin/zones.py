"""A tape's memory zones through the index: find them, read only their entries, index what a write added."""

from __future__ import annotations

from collections.abc import Iterator, Set

from tapeview.sources import Entry, TapeNotFound
from tapeview.sources.bub import tool_calls
from tapeview.tapes import index
from tapeview.tapes import rows as index_rows
from tapeview.tapes.models import Tape
from tapeview.tapes.rows import Match
from tapeview.tapes.timeline import read_rows

from .stores import bub_zone
from .stores.bub_zone import Zone
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
