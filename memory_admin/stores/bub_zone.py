"""Bub memory zones (PR #33): the versioned memory/open … memory/seal regions of a tape, read only.

Follows ../shared/formats/bub.md §8 and the PR's own reader (`MemoryZone._load_snapshot`): a zone
is a `memory/seal` anchor with an int `state.version`, walked back to the nearest `memory/open`
of the same version; only `memory.long_term` and `memory.daily` events between them count.
Everything that reads zones lives here (from entries, or from a tape or its memory sidecar on
disk); bub_zone_write only appends new versions.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from tapeview.sources.bub import scan
from tapeview.sources.model import Entry, TapeNotFound
from tapeview.sources.raw_bytes import exists, open_bytes, size_of

from .model import StoreError

KIND = "bub.zone"
SIDECAR_SUFFIX = "__sidecar__memory.jsonl"
OPEN = "memory/open"
SEAL = "memory/seal"
LONG_TERM = "memory.long_term"
DAILY = "memory.daily"


@dataclass(frozen=True)
class Zone:
    """One complete version of the memory, as the agent would read it if it were the newest."""

    version: int
    long_term: str
    daily: dict[str, str]  # date -> content, newest date first
    open_pos: int
    seal_pos: int
    date: datetime | None  # the seal's date (None on PR #33-era lines, which have no date)
    updated_at: str | None  # the latest updated_at among its events
    # Lines inside the zone the agent cannot read; it skips them, so what they held is missing.
    unreadable: tuple[int, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.long_term and not self.daily


@dataclass(frozen=True)
class ZoneChange:
    """What one version changed compared with the version before it."""

    version: int
    date: datetime | None
    long_term_changed: bool
    daily_added: list[str]
    daily_removed: list[str]
    daily_changed: list[str]
    summary: str


@dataclass(frozen=True)
class ZoneFile:
    """A file's zones as read up to `size` bytes, and where the next line will start."""

    zones: list[Zone]
    size: int
    lines: int  # complete lines (blank ones included) before `size`
    residue: bool  # an unfinished line ends the file


def read_zones(entries: Iterable[Entry]) -> list[Zone]:
    """Every complete zone of a tape, in file order (the order of their seals)."""
    zones: list[Zone] = []
    events: list[Entry] = []
    unreadable: list[int] = []
    # The nearest open before a seal is the last one seen so far, so one pass finds every pair.
    opens: dict[int, tuple[Entry, int]] = {}
    for entry in entries:
        if not entry.readable or not isinstance(entry.payload, dict):
            if not entry.readable:
                unreadable.append(entry.pos)
            continue
        if entry.kind == "event" and entry.name in (LONG_TERM, DAILY):
            events.append(entry)
        elif entry.kind == "anchor" and entry.name in (OPEN, SEAL):
            version = _version(entry)
            if version is None:
                continue
            if entry.name == OPEN:
                opens[version] = (entry, len(events))
            elif version in opens:
                opened, start = opens[version]
                inside = unreadable[bisect_right(unreadable, opened.pos) : bisect_left(unreadable, entry.pos)]
                zones.append(_zone(version, opened, entry, events[start:], tuple(inside)))
    return zones


def current(zones: list[Zone]) -> Zone | None:
    """The zone the agent reads: the highest version; a later but lower version does not win.

    On a tie the first in the file wins, because the agent only moves on to a strictly higher
    version; versions below 1 never win, because its search starts from 0.
    """
    best = None
    for zone in zones:
        if zone.version > (best.version if best else 0):
            best = zone
    return best


def changes(zones: list[Zone]) -> list[ZoneChange]:
    """Each version compared with the one before it, in version order (file order within a version)."""
    out = []
    previous: Zone | None = None
    for zone in sorted(zones, key=lambda z: z.version):
        out.append(_compare(previous, zone))
        previous = zone
    return out


def read_file(path: Path) -> ZoneFile:
    """Every zone of a file, with the size and line count the next append must find unchanged."""
    try:
        size = size_of(path)
    except FileNotFoundError:
        if path.name.endswith(SIDECAR_SUFFIX):
            return ZoneFile([], 0, 0, False)
        raise TapeNotFound(str(path)) from None
    entries: list[Entry] = []
    end, pos = 0, 0
    for entry in scan(path):
        if entry.offset + entry.length > size:
            break
        end, pos = entry.offset + entry.length, entry.pos
        if not entry.readable or entry.name in (OPEN, SEAL, LONG_TERM, DAILY):
            entries.append(entry)
    # Blank lines and an unfinished last line after the last entry still take places in the file.
    with open_bytes(path) as f:
        f.seek(end)
        rest = f.read(size - end)
    residue = bool(rest) and not rest.endswith(b"\n")
    return ZoneFile(read_zones(entries), size, pos + rest.count(b"\n"), residue)


def memory_sidecar(path: Path) -> Path:
    """`<tape>__sidecar__memory.jsonl` beside the tape: a zone there never cuts the agent's context."""
    path = Path(path)
    stem = path.name.removesuffix(".jsonl")
    return path.with_name(stem + SIDECAR_SUFFIX)


def where_zone_lives(path: Path) -> Path:
    """The memory sidecar if it holds a zone, else the tape itself (where the agent keeps its zone)."""
    sidecar = memory_sidecar(path)
    if exists(sidecar) and read_file(sidecar).zones:
        return sidecar
    return Path(path)


def cuts_context(target: Path) -> bool:
    """True when the target is a live tape: its new memory/seal anchor becomes the agent's last anchor."""
    return "__sidecar__" not in Path(target).name


def zone_text(zone: Zone | None) -> str:
    """The zone as one text for diffs and conflicts: long-term text, then a `## <date>` block per note."""
    if zone is None:
        return ""
    blocks = [zone.long_term] if zone.long_term else []
    blocks += [f"## {day}\n{note}" for day, note in zone.daily.items()]
    return "\n\n".join(blocks)


def current_zone(path: Path) -> Zone | None:
    """The zone the agent would read from a file (None for a missing sidecar or a tape without one)."""
    return current(read_file(Path(path)).zones)


def prune_preview(zone: Zone | None, older_than_days: int = 30, today: date | None = None) -> list[str]:
    """The dates of the notes a prune would remove: those before today - older_than_days."""
    if older_than_days < 0:
        raise StoreError("older_than_days must not be negative")
    if zone is None:
        return []
    # ISO dates compare as strings; a date key that is not ISO compares as the agent's would.
    cutoff = ((today or datetime.now(UTC).date()) - timedelta(days=older_than_days)).isoformat()
    return [day for day in zone.daily if day < cutoff]


def _version(entry: Entry) -> int | None:
    state = entry.payload.get("state")
    version = state.get("version") if isinstance(state, dict) else None
    return version if isinstance(version, int) and not isinstance(version, bool) else None


def _zone(version: int, opened: Entry, seal: Entry, events: list[Entry], unreadable: tuple[int, ...]) -> Zone:
    long_term = ""
    dailies: list[tuple[str, str]] = []
    stamps: list[tuple[datetime, str]] = []
    for event in events:
        data = event.payload.get("data")
        if not isinstance(data, dict):
            continue
        content = data.get("content")
        if event.name == LONG_TERM and isinstance(content, str):
            long_term = content
        elif event.name == DAILY and isinstance(content, str) and isinstance(data.get("date"), str):
            dailies.append((data["date"], content))
        stamp = _stamp(data.get("updated_at"))
        if stamp:
            stamps.append(stamp)
    # The agent sorts its notes newest date first (stable), and for a repeated date reads the first.
    dailies.sort(key=lambda d: d[0], reverse=True)
    daily: dict[str, str] = {}
    for day, content in dailies:
        daily.setdefault(day, content)
    return Zone(
        version=version,
        long_term=long_term,
        daily=daily,
        open_pos=opened.pos,
        seal_pos=seal.pos,
        date=seal.date,
        updated_at=max(stamps)[1] if stamps else None,
        unreadable=unreadable,
    )


def _stamp(value: object) -> tuple[datetime, str] | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)), value


def _compare(before: Zone | None, after: Zone) -> ZoneChange:
    old_long_term = before.long_term if before else ""
    old_daily = before.daily if before else {}
    added = [d for d in after.daily if d not in old_daily]
    removed = [d for d in old_daily if d not in after.daily]
    changed = [d for d in after.daily if d in old_daily and old_daily[d] != after.daily[d]]
    long_term_changed = old_long_term != after.long_term
    if before is None:
        summary = (
            "first version (empty)"
            if after.is_empty
            else "first version: " + _describe("", after.long_term, added, changed, removed)
        )
    elif after.is_empty and not before.is_empty:
        summary = "cleared"
    else:
        summary = _describe(old_long_term, after.long_term, added, changed, removed) or "unchanged"
    return ZoneChange(
        version=after.version,
        date=after.date,
        long_term_changed=long_term_changed,
        daily_added=added,
        daily_removed=removed,
        daily_changed=changed,
        summary=summary,
    )


def _describe(old: str, new: str, added: list[str], changed: list[str], removed: list[str]) -> str:
    parts = []
    if old != new:
        parts.append("long-term memory " + ("added" if not old else "removed" if not new else "edited"))
    for verb, dates in (("added", added), ("edited", changed), ("removed", removed)):
        if dates:
            parts.append(f"{'daily' if len(dates) == 1 else 'dailies'} {', '.join(dates)} {verb}")
    return "; ".join(parts)
