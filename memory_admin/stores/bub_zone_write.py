"""Edits to Bub memory zones: each one appends a complete new zone version, as PR #33's agent does.

Follows ../shared/formats/bub.md §8: a bare `memory/open` anchor with `{"version": N}`, the
`memory.long_term` event if there is long-term text, one `memory.daily` per date (newest first),
then `memory/seal`, with N = the current version + 1. The lines go through the guest writer
(`tapeview.sources.bub_append`), so a live tape is only written while the agent is idle.
Every edit carries the version the editor saw; a different current version is a StaleEdit, except
for a note appended to a day whose note only grew since (an append rebased on top of the newer zone).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path

from tapeview.sources import bub_next
from tapeview.sources.bub import parse_line
from tapeview.sources.bub_append import ORIGIN, append, encode

from . import locks
from .bub_zone import (
    DAILY,
    LONG_TERM,
    OPEN,
    SEAL,
    SIDECAR_SUFFIX,
    Zone,
    ZoneFile,
    current,
    prune_preview,
    read_file,
    read_zones,
    zone_text,
)
from .files import announce
from .model import StaleEdit, StoreError

NO_ZONE_IN_NEXT = (
    "this tape is in Bub's next format, which keeps no memory zone (formats/bub-next.md): a zone's lines "
    "would be unreadable to Bub there, and it would refuse the whole tape; nothing was written"
)
# What an edit makes of the current zone (and all zones): (long-term text, date -> note), or None.
Change = Callable[[Zone | None, list[Zone]], tuple[str, dict[str, str]] | None]
# Whether an edit made on the base zone (None: no zone yet) may be made on the current one instead.
Rebase = Callable[[Zone | None, Zone | None], bool]


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
    """Add a note to a day (default: today in UTC) the way the agent's `memory.daily` does.

    Made on top of a zone newer than `expected` (the agent's or another tab's) where the day's note
    there still begins with the whole note of `expected`, line for line: an append only adds after
    it, so it clashes with nothing but a change of those lines (a note rewritten, pruned, cleared).
    """
    if not text.strip():
        raise StoreError("the note is empty")
    key = (day or _moment(now).date()).isoformat()

    def grew(base: Zone | None, now_zone: Zone | None) -> bool:
        before = base.daily.get(key, "") if base else ""
        after = now_zone.daily.get(key, "") if now_zone else ""
        if after != before and (after.endswith(f"\n{text}") or after == f"# {key}\n\n{text}"):
            return False  # this very note was added since: a Save sent twice, not a second note
        return not before or after == before or after.startswith(before + "\n")

    def change(zone: Zone | None, _: list[Zone]) -> tuple[str, dict[str, str]]:
        daily = dict(zone.daily) if zone else {}
        daily[key] = f"{daily[key]}\n{text}" if key in daily else f"# {key}\n\n{text}"
        return (zone.long_term if zone else ""), daily

    return _mutate(path, expected, change, now, quiet_seconds, clock, rebase=grew)


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
    rebase: Rebase | None = None,
) -> Zone | None:
    path = Path(path)
    tape = (
        path.with_name(path.name.removesuffix(SIDECAR_SUFFIX) + ".jsonl")
        if path.name.endswith(SIDECAR_SUFFIX)
        else path
    )
    if bub_next.file_format(tape) == bub_next.FORMAT:
        raise StoreError(NO_ZONE_IN_NEXT)
    # Read, check and append under the file's lock: of two Tapeview edits with the same expected
    # version, the second reads the first's zone and is stale (or, an append, rebased on it). The
    # agent takes no lock; the size check in append() catches its writes.
    with locks.hold(path):
        snap = read_file(path)
        zone = current(snap.zones)
        if (zone.version if zone else None) != expected and not _rebases(snap.zones, expected, zone, rebase):
            raise StaleEdit(zone_text(zone), str(zone.version) if zone else "none")
        new = change(zone, snap.zones)
        if new is None:
            return None
        long_term, daily = new
        version = (zone.version if zone else 0) + 1
        stamp = _moment(now).isoformat()
        announce(path, str(version))  # a rebased edit's version is known only now
        try:
            written = append(
                path,
                lambda nid: zone_lines(nid, version, long_term, daily, stamp),
                quiet_seconds=quiet_seconds,
                now=clock,
                # The version was checked against the file at this size: any growth since means a re-read.
                expect_size=snap.size,
                create=path.name.endswith(SIDECAR_SUFFIX),
            )
        except ValueError as exc:  # text a line cannot hold as the agent reads it back
            raise StoreError(str(exc)) from None
    return _written_zone(written, snap)


def _rebases(zones: list[Zone], expected: int | None, zone: Zone | None, rebase: Rebase | None) -> bool:
    """The edit may be made on the current zone instead of `expected`: its base is still in the file
    (the first zone of that version, the one the agent read) and `rebase` finds nothing clashes."""
    if rebase is None:
        return False
    base = next((z for z in zones if z.version == expected), None)
    if expected is not None and base is None:  # a base this file does not hold: nothing to compare
        return False
    return rebase(base, zone)


def zone_lines(nid: int, version: int, long_term: str, daily: dict[str, str], stamp: str) -> list[dict]:
    """The entries of one zone version, ids from `nid` on, as every zone write appends them."""
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


def _written_zone(written: list[dict], snap: ZoneFile) -> Zone:
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
