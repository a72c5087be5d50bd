"""The adapter of a Bub memory zone: versions are the zones in the tape, each edit appends a new one."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from django import forms
from django.conf import settings
from django.urls import reverse

from tapeview.accounts.models import AuditEvent
from tapeview.sources import TapeNotFound
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .. import zones
from ..forms import PRUNE_DAYS, PruneForm
from ..history import Source, Step, by_operator, write_audits
from ..models import MemoryStore
from ..stores import bub_zone, bub_zone_write
from ..stores.model import Snapshot, StaleEdit, StoreError
from .base import PAGE, StoreKind, VersionChoice, VersionList


class BubZone(StoreKind):
    """A Bub memory zone: versions are the zones in the tape, each edit appends a new one."""

    names = (bub_zone.KIND,)
    partial = "memory_admin/_zone.html"
    filters = PruneForm
    long_term = True
    prune = True
    lists_revisions = False
    long_term_action = "zone.long_term"
    restore_action = "zone.restore"
    edited_part = "long-term memory"

    def read(self, store: MemoryStore) -> Snapshot:
        """The current zone alone (its `items`: [it]), found by the seals' versions: no other
        version's entries are read."""
        holder = zones.holder_of(store.tape)
        if holder is None:
            return zones.snapshot(zones.EMPTY)
        found = zones.seals(holder)
        at = found.current
        zone = zones.read_at(holder, found, {at}).get(at) if at is not None else None  # type: ignore[arg-type]
        if at is not None and zone is None:  # a seal without its open: the whole read decides
            return zones.snapshot(zones.zones_of(store.tape))
        return Snapshot(
            str(zone.version) if zone else "missing", bub_zone.zone_text(zone), [zone] if zone else []
        )

    def versions(self, store: MemoryStore) -> list[VersionChoice]:
        found = zones.zones_of(store.tape)
        changes = {c.version: c for c in found["changes"]}  # what the page's versions table says
        return [
            VersionChoice(str(z.version), f"v{z.version}", z.date, changes[z.version].summary)
            for z in reversed(found["zones"])
        ]

    def version_list(self, store: MemoryStore, before: int | None = None) -> VersionList:
        """The newest PAGE versions, from the seals alone (the page's table reads its own window)."""
        found = self._seals(store)
        return VersionList([_choice(s) for s in reversed(found[-PAGE:])], len(found) > PAGE)

    def choices_near(self, store: MemoryStore, wanted: tuple[str | None, ...]) -> list[VersionChoice]:
        """The newest PAGE versions and those `wanted` (a diff's two), newest first."""
        found = self._seals(store)
        keep = {s.version for s in found[-PAGE:]} | {int(v) for v in wanted if v and _number(v)}
        seen: set[int] = set()
        listed = []
        for seal in reversed(found):
            if seal.version in keep and seal.version not in seen:
                seen.add(seal.version)
                listed.append(_choice(seal))
        return listed

    def previous(self, store: MemoryStore, version: str) -> str | None:
        """The version listed after `version` newest first: the seal before its first one in the file."""
        found = self._seals(store)
        at = next((i for i in range(len(found) - 1, -1, -1) if str(found[i].version) == version), None)
        return str(found[at - 1].version) if at else None

    def count(self, store: MemoryStore) -> tuple[int, datetime | None]:
        """How many versions, and the newest one's date: what the Memory list shows."""
        found = self._seals(store)
        return len(found), found[-1].date if found else None

    def version_text(self, store: MemoryStore, version: str) -> str:
        return bub_zone.zone_text(self._zone(store, version))

    def edited_text(self, store: MemoryStore, version: str) -> str:
        return self._zone(store, version).long_term

    def _seals(self, store: MemoryStore) -> zones.Seals:
        holder = zones.holder_of(store.tape)
        return zones.seals(holder) if holder is not None else zones.Seals()

    def _zone(self, store: MemoryStore, version: str) -> bub_zone.Zone:
        zone = self._find(store, version)
        if zone is None and settings.TAPEVIEW_WEB_INDEXES:
            # A version the agent just wrote (a conflict names it) may not be indexed yet.
            zones.refresh(store.tape)
            zone = self._find(store, version)
        if zone is None:
            raise LookupError(f"no version {version!r} of this memory zone")
        return zone

    def _find(self, store: MemoryStore, version: str) -> bub_zone.Zone | None:
        """The first zone of that version in the file (the one the agent read), and only it read."""
        holder = zones.holder_of(store.tape)
        if holder is None or not _number(version):
            return None
        found = zones.seals(holder)
        for i, seal in enumerate(found):
            if str(seal.version) == version and (zone := zones.read_at(holder, found, {i}).get(i)):
                return zone
        return None

    def history(self, store: MemoryStore) -> list[Step]:
        """The zones the agent read one after the other (each that raised the version: a later but
        lower one is never read), in the tape and then in its memory sidecar, each by the tool call
        that wrote it or by the Tapeview user."""
        audits = write_audits(store)
        return [step for found in zones.zone_history(store.tape) for step in _steps(found, audits)]

    def history_back(self, store: MemoryStore) -> Iterator[Step]:
        """history(), newest first, PAGE zones at a time: blame reads back only as far as it must."""
        for holder, found in reversed(self._holders(store)):
            kept = found.raising
            for end in range(len(kept), 0, -PAGE):
                batch = kept[max(0, end - PAGE) : end]
                yield from reversed(self._batch_steps(store, holder, found, batch))

    def step_at(
        self, store: MemoryStore, tape_key: str | None, pos: int | None, when: datetime | None, label: str
    ) -> Step:
        """history.held_at's answer from the seals' places and dates alone, then only that zone read."""
        places = [(holder, found, i) for holder, found in self._holders(store) for i in found.raising]
        at = None
        if tape_key is not None and pos is not None:
            mine = [n for n, (holder, _, _) in enumerate(places) if holder.key == tape_key]
            if mine:
                where = [places[n][1][places[n][2]].pos for n in mine]  # ascending: file order
                k = bisect_right(where, pos)
                at = mine[k - 1] if k else mine[0] - 1
                if at < 0:
                    raise LookupError(f"no version of this store as of {label}")
            elif when is None:
                raise LookupError(f"{label} has no time (the tape records none): pick a time instead")
        if at is None:
            assert when is not None
            best = None
            for n, (_, found, i) in enumerate(places):
                date = found[i].date
                if date is not None and date <= when and (best is None or (date, n) >= best):
                    best = (date, n)
            if best is None:
                raise LookupError(f"no version of this store as of {label or when.isoformat()}")
            at = best[1]
        holder, found, i = places[at]
        steps = self._batch_steps(store, holder, found, [i])
        return steps[0] if steps else super().step_at(store, tape_key, pos, when, label)

    def _holders(self, store: MemoryStore) -> list[tuple[Tape, zones.Seals]]:
        """The files that held the zone (the tape, then its memory sidecar), each with its seals."""
        if store.tape is None:
            raise TapeNotFound("this memory zone's tape is no longer indexed")
        return [(holder, zones.seals(holder)) for holder in zones.holders(store.tape)]

    def _batch_steps(
        self, store: MemoryStore, holder: Tape, found: list[zones.Seal], batch: list[int]
    ) -> list[Step]:
        """The steps of these seals, oldest first, with the zone after them read too: the tool
        calls after a run of zones claim them only up to the next turn's zones (zones.writers)."""
        read = zones.read_at(holder, found, {*batch, batch[-1] + 1})
        audits = write_audits(store, {str(found[i].version) for i in batch})
        window = {"holder": holder, "zones": [read[i] for i in sorted(read)]}
        mine = {found[i].pos for i in batch}
        return [step for step in _steps(window, audits) if step.place and step.place[1] in mine]

    def long_term_text(self, snap: Snapshot) -> str:
        zone = bub_zone.current(snap.items)
        return zone.long_term if zone else ""

    def daily(self, snap: Snapshot) -> dict[str, str]:
        zone = bub_zone.current(snap.items)
        return dict(zone.daily) if zone else {}

    def export_content(self, snap: Snapshot) -> dict:
        return {"long_term": self.long_term_text(snap), "daily": self.daily(snap)}

    def size(self, store: MemoryStore, snap: Snapshot | None = None) -> int:
        """The current zone's memory (long-term text and notes, UTF-8), not the tape that holds it."""
        zone = bub_zone.current((snap or self.read(store)).items)
        if zone is None:
            return 0
        return len(zone.long_term.encode()) + sum(len(note.encode()) for note in zone.daily.values())

    def written_at(self, store: MemoryStore, snap: Snapshot) -> datetime | None:
        zone = bub_zone.current(snap.items)  # the file's time moves with every entry the agent appends
        return zone.date if zone and zone.date else store.changed_at

    def page_context(self, store: MemoryStore, snap: Snapshot, filters: forms.Form) -> dict:
        """`current` (the zone), `holder`, `page` (zones.ZonePage: the versions sealed before
        `?before=`, each with its change worked out once here), the `urls` its rows link to and
        the prune preview's figures."""
        holder = zones.holder_of(store.tape)
        current = bub_zone.current(snap.items)
        found = zones.seals(holder) if holder is not None else []
        before = filters.cleaned_data.get("before")
        page = (
            zones.page(holder, found, before, PAGE)
            if holder is not None
            else zones.ZonePage([], 0, None, None)
        )
        days = filters.cleaned_data.get("days")  # None when absent or invalid: no preview
        # Reversed once here, not three times a row in the versions table.
        names = {"store": "store_detail", "diff": "store_diff", "action": "zone_action"}
        urls = {k: reverse(f"memory_admin:{name}", args=[store.key]) for k, name in names.items()}
        if holder is not None:
            urls["tape"] = reverse("tapes:tape_detail", args=[holder.key])
        return {
            "urls": urls,
            "holder": holder,
            "current": current,
            "page": page,
            "cuts_context": bub_zone.cuts_context(Path(store.path)),
            "prune_days": PRUNE_DAYS if days is None else days,
            "prune_preview": None if days is None else bub_zone.prune_preview(current, days),
        }

    def audit_detail(self, store: MemoryStore) -> dict:
        return {"target": Path(store.path).name}

    def write_long_term(self, store: MemoryStore, text: str, base_version: str, editor: str) -> None:
        self.apply(store, "long_term", base_version, text=text)

    def restore(self, store: MemoryStore, version: str, base_version: str, editor: str) -> None:
        if not (version.isascii() and version.isdigit()):
            raise LookupError(f"no version {version!r} of this memory zone")
        self.apply(store, "restore", base_version, version=int(version))

    def prune_preview(self, store: MemoryStore, days: int) -> list[str]:
        return bub_zone.prune_preview(bub_zone.current(self.read(store).items), days)

    def apply(self, store: MemoryStore, action: str, base_version: str, **params) -> None:
        """One zone edit (long_term, daily, prune, clear, restore) by the guest-write rules, then indexed."""
        target, quiet = Path(store.path), {"quiet_seconds": settings.TAPEVIEW_QUIET_SECONDS}
        expected = self._expected(store, base_version)
        operations: dict[str, Callable[[], object]] = {
            "long_term": lambda: bub_zone_write.write_long_term(target, params["text"], expected, **quiet),
            "daily": lambda: bub_zone_write.add_daily(target, params["text"], expected, **quiet),
            "prune": lambda: bub_zone_write.prune(target, params["days"], expected, **quiet),
            "clear": lambda: bub_zone_write.clear(target, expected, **quiet),
            "restore": lambda: bub_zone_write.restore(target, params["version"], expected, **quiet),
        }
        operations[action]()
        zones.refresh(store.tape)

    def move(self, store: MemoryStore, base_version: str) -> None:
        """Keep the zone in `<tape>__sidecar__memory.jsonl` from now on: the agent never reads it there,
        so later memory writes no longer cut the agent's context (formats/bub.md §8)."""
        target = bub_zone.memory_sidecar(Path(store.tape.path))
        if target == Path(store.path):
            raise StoreError("the zone is in its memory sidecar already")
        current = zones.zones_of(store.tape)["current"]
        if base_version != (str(current.version) if current else "missing"):
            raise StaleEdit(bub_zone.zone_text(current), str(current.version) if current else "missing")
        if current is None:
            raise StoreError("there is no memory zone to move")
        existing = bub_zone.current_zone(target)
        bub_zone_write.copy_zone(
            current,
            target,
            existing.version if existing else None,
            quiet_seconds=settings.TAPEVIEW_QUIET_SECONDS,
        )
        discovery.sync()  # the new sidecar joins the index as the tape's attachment

    def _expected(self, store: MemoryStore, base_version: str) -> int | None:
        """A zone's versions are numbers: any other base is stale (a conflict), never a crash."""
        if base_version in ("missing", "none", ""):
            return None
        # isascii: "²".isdigit() is True, and int() refuses it.
        if base_version.isascii() and base_version.isdigit() and len(base_version) < 18:
            return int(base_version)
        snap = self.read(store)
        raise StaleEdit(snap.text, snap.version)


def _choice(seal: zones.Seal) -> VersionChoice:
    return VersionChoice(str(seal.version), f"v{seal.version}", seal.date)


def _number(version: str) -> bool:
    return version.isascii() and version.isdigit() and len(version) < 18


def _steps(found: dict, audits: list[AuditEvent]) -> list[Step]:
    holder = found["holder"]
    # Zone versions restart in a sidecar: an audit row counts for the file it names.
    mine = {a.after: a for a in audits if a.detail.get("target") in (None, Path(holder.path).name)}
    written = {z.seal_pos for z in found["zones"] if str(z.version) in mine}
    calls = zones.writers(found, skip=written)
    steps: list[Step] = []
    for zone in found["zones"]:
        if zone.version <= (int(steps[-1].version) if steps else 0):
            continue
        step = Step(
            str(zone.version),
            zone.date,
            bub_zone.zone_text(zone),
            source=Source(holder.key, zone.seal_pos),
            note=f"memory/seal of v{zone.version}",
            items=[zone],
            place=(holder.key, zone.seal_pos),
        )
        if audit := mine.get(step.version):
            author, source = by_operator(audit)
            step = replace(step, author=author, note=f"{audit.action} in Tapeview")
            step = replace(step, source=Source(holder.key, zone.seal_pos, audit_id=source.audit_id))
        elif zone.seal_pos in calls:
            pos, name = calls[zone.seal_pos]
            step = replace(step, source=Source(holder.key, pos), note=f"{name} call")
        steps.append(step)
    return steps
