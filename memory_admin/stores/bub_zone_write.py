"""Edits to Bub memory zones: each one appends a complete new zone version, as PR #33's agent does.

Follows ../shared/formats/bub.md §8: a bare `memory/open` anchor with `{"version": N}`, the
`memory.long_term` event if there is long-term text, one `memory.daily` per date (newest first),
then `memory/seal`, with N = the current version + 1. The lines go through the guest writer
(`tapeview.sources.bub_append`), so a live tape is only written while the agent is idle.
Every edit carries the version the editor saw; a different current version is a StaleEdit.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from tapeview.sources.bub import parse_line, scan
from tapeview.sources.bub_append import ORIGIN, append, encode
from tapeview.sources.model import Entry, TapeNotFound

from .bub_zone import DAILY, LONG_TERM, OPEN, SEAL, Zone, current, read_zones
from .model import StaleEdit, StoreError

SIDECAR_SUFFIX = "__sidecar__memory.jsonl"
# What an edit makes of the current zone (and all zones): (long-term text, date -> note), or None.
Change = Callable[[Zone | None, list[Zone]], tuple[str, dict[str, str]] | None]


@dataclass(frozen=True)
class _Snapshot:
    """A file's zones as read up to `size` bytes, and where the next line will start."""

    zones: list[Zone]
    size: int
    lines: int  # complete lines (blank ones included) before `size`
    residue: bool  # an unfinished line ends the file


def memory_sidecar(path: Path) -> Path:
    """`<tape>__sidecar__memory.jsonl` beside the tape: a zone there never cuts the agent's context."""
    path = Path(path)
    stem = path.name.removesuffix(".jsonl")
    return path.with_name(stem + SIDECAR_SUFFIX)


def where_zone_lives(path: Path) -> Path:
    """The memory sidecar if it holds a zone, else the tape itself (where the agent keeps its zone)."""
    sidecar = memory_sidecar(path)
    if sidecar.exists() and _read(sidecar).zones:
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
    return current(_read(Path(path)).zones)


def write_long_term(
    path: Path,
    text: str,
    expected: int | None,
    *,
    now: datetime | None = None,
    quiet_seconds: float = 1.5,
    clock: Callable[[], float] = time.time,
) -> Zone:
    """Replace the long-term text (an empty text removes it); the dailies are kept."""
    return _mutate(path, expected, lambda z, _: (text, dict(z.daily) if z else {}), now, quiet_seconds, clock)


def add_daily(
    path: Path,
    text: str,
    expected: int | None,
    *,
    day: date | None = None,
    now: datetime | None = None,
    quiet_seconds: float = 1.5,
    clock: Callable[[], float] = time.time,
) -> Zone:
    """Add a note to a day (default: today in UTC) the way the agent's `memory.daily` does."""
    if not text.strip():
        raise StoreError("the note is empty")
    key = (day or _moment(now).date()).isoformat()

    def change(zone: Zone | None, _: list[Zone]) -> tuple[str, dict[str, str]]:
        daily = dict(zone.daily) if zone else {}
        daily[key] = f"{daily[key]}\n{text}" if key in daily else f"# {key}\n\n{text}"
        return (zone.long_term if zone else ""), daily

    return _mutate(path, expected, change, now, quiet_seconds, clock)


def prune_preview(zone: Zone | None, older_than_days: int = 30, today: date | None = None) -> list[str]:
    """The dates of the notes a prune would remove: those before today - older_than_days."""
    if older_than_days < 0:
        raise StoreError("older_than_days must not be negative")
    if zone is None:
        return []
    # ISO dates compare as strings; a date key that is not ISO compares as the agent's would.
    cutoff = ((today or datetime.now(UTC).date()) - timedelta(days=older_than_days)).isoformat()
    return [day for day in zone.daily if day < cutoff]


def prune(
    path: Path,
    older_than_days: int,
    expected: int | None,
    *,
    today: date | None = None,
    now: datetime | None = None,
    quiet_seconds: float = 1.5,
    clock: Callable[[], float] = time.time,
) -> Zone | None:
    """Remove old notes; like the agent, write nothing (and return None) when none would go."""

    def change(zone: Zone | None, _: list[Zone]) -> tuple[str, dict[str, str]] | None:
        gone = prune_preview(zone, older_than_days, today)
        if zone is None or not gone:
            return None
        return zone.long_term, {day: note for day, note in zone.daily.items() if day not in gone}

    return _mutate(path, expected, change, now, quiet_seconds, clock)


def clear(
    path: Path,
    expected: int | None,
    *,
    now: datetime | None = None,
    quiet_seconds: float = 1.5,
    clock: Callable[[], float] = time.time,
) -> Zone:
    """An empty new version, as the agent's `memory.clear` writes."""
    return _mutate(path, expected, lambda z, _: ("", {}), now, quiet_seconds, clock)


def restore(
    path: Path,
    version: int,
    expected: int | None,
    *,
    now: datetime | None = None,
    quiet_seconds: float = 1.5,
    clock: Callable[[], float] = time.time,
) -> Zone:
    """A new version whose long-term text and notes equal those of `version` exactly."""

    def change(_: Zone | None, zones: list[Zone]) -> tuple[str, dict[str, str]]:
        # Of several zones with one version, the first is the one the agent read.
        old = next((z for z in zones if z.version == version), None)
        if old is None:
            raise StoreError(f"there is no version {version} to restore")
        return old.long_term, dict(old.daily)

    return _mutate(path, expected, change, now, quiet_seconds, clock)


def _mutate(
    path: Path,
    expected: int | None,
    change: Change,
    now: datetime | None,
    quiet_seconds: float,
    clock: Callable[[], float],
) -> Zone | None:
    path = Path(path)
    snap = _read(path)
    zone = current(snap.zones)
    if (zone.version if zone else None) != expected:
        raise StaleEdit(zone_text(zone), str(zone.version) if zone else "none")
    new = change(zone, snap.zones)
    if new is None:
        return None
    long_term, daily = new
    version = (zone.version if zone else 0) + 1
    stamp = _moment(now).isoformat()
    written = append(
        path,
        lambda nid: _zone_lines(nid, version, long_term, daily, stamp),
        quiet_seconds=quiet_seconds,
        now=clock,
        # The version was checked against the file at this size: any growth since means a re-read.
        expect_size=snap.size,
        create=path.name.endswith(SIDECAR_SUFFIX),
    )
    return _written_zone(written, snap)


def _zone_lines(nid: int, version: int, long_term: str, daily: dict[str, str], stamp: str) -> list[dict]:
    payloads: list[tuple[str, dict]] = [("anchor", {"name": OPEN, "state": {"version": version}})]
    if long_term:
        payloads.append(("event", {"name": LONG_TERM, "data": {"content": long_term, "updated_at": stamp}}))
    # Newest date first, as the agent sorts its notes before writing them.
    for day, note in sorted(daily.items(), key=lambda item: item[0], reverse=True):
        data = {"date": day, "content": note, "updated_at": stamp}
        payloads.append(("event", {"name": DAILY, "data": data}))
    payloads.append(("anchor", {"name": SEAL, "state": {"version": version}}))
    return [
        {"id": nid + i, "kind": kind, "payload": payload, "meta": {"origin": ORIGIN}, "date": stamp}
        for i, (kind, payload) in enumerate(payloads)
    ]


def _read(path: Path) -> _Snapshot:
    """Every zone of a file, with the size and line count the next append must find unchanged."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        if path.name.endswith(SIDECAR_SUFFIX):
            return _Snapshot([], 0, 0, False)
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
    with open(path, "rb") as f:
        f.seek(end)
        rest = f.read(size - end)
    residue = bool(rest) and not rest.endswith(b"\n")
    return _Snapshot(read_zones(entries), size, pos + rest.count(b"\n"), residue)


def _written_zone(written: list[dict], snap: _Snapshot) -> Zone:
    """The zone just written, as a reader of the file will find it (positions included)."""
    offset = snap.size + (1 if snap.residue else 0)
    pos = snap.lines + (2 if snap.residue else 1)
    parsed = []
    for line in written:
        raw = encode([line])
        parsed.append(parse_line(raw, pos, offset))
        pos, offset = pos + 1, offset + len(raw)
    return read_zones(parsed)[0]


def _moment(now: datetime | None) -> datetime:
    if now is None:
        return datetime.now(UTC)
    return now if now.tzinfo else now.replace(tzinfo=UTC)


def copy_zone(
    zone: Zone,
    target: Path,
    expected: int | None,
    *,
    now: datetime | None = None,
    quiet_seconds: float = 1.5,
    clock: Callable[[], float] = time.time,
) -> Zone:
    """A new version in `target` with `zone`'s text and notes: moves a tape's zone to its memory sidecar."""
    return _mutate(target, expected, lambda *_: (zone.long_term, dict(zone.daily)), now, quiet_seconds, clock)
