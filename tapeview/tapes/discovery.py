"""Which tapes the sources hold: discover them, keep their rows, drop the gone ones, index what changed."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings

from tapeview.sources import SourceSpec, TapeFile, parse_sources, reader

from .index import Progress, refresh
from .models import Tape


def configured_sources() -> list[SourceSpec]:
    """The sources of this deployment; the demo directory when none are configured."""
    if settings.TAPEVIEW_SOURCES.strip():
        return parse_sources(settings.TAPEVIEW_SOURCES)
    demo = settings.TAPEVIEW_DEMO_DIR
    return [
        SourceSpec("demo-bub", "bub", demo / "bub" / "tapes"),
        SourceSpec("demo-nanobot", "nanobot", demo / "nanobot"),
        SourceSpec("demo-yachiyo", "yachiyo", demo / "yachiyo"),
        SourceSpec("demo-araliya", "araliya", demo / "araliya"),
    ]


def tape_key(source: str, rel: str) -> str:
    return hashlib.blake2b(f"{source}\0{rel}".encode(), digest_size=8).hexdigest()


@dataclass
class SyncReport:
    tapes: int = 0
    indexed: int = 0
    removed: int = 0
    problems: list[str] = field(default_factory=list)


def sync(specs: Iterable[SourceSpec] | None = None, progress: Progress | None = None) -> SyncReport:
    """Discover every tape of the sources, drop the gone ones, index what changed."""
    report = SyncReport()
    specs = list(configured_sources() if specs is None else specs)
    for spec in specs:
        files = reader(spec.kind).discover(spec.path)
        if not spec.path.exists():
            report.problems.append(f"{spec.label}: {spec.path} does not exist")
        tapes = _upsert(spec, files)
        report.removed += _remove_gone(spec.label, {f.key for f in files})
        for tape in tapes:
            report.tapes += 1
            if refresh(tape, progress):
                report.indexed += 1
    Tape.objects.exclude(source__in=[s.label for s in specs]).delete()
    return report


def pending_bytes(specs: Iterable[SourceSpec]) -> int:
    """How many bytes an index run would read (for a progress bar)."""
    total = 0
    known = {(t.source, t.rel): t for t in Tape.objects.all()}
    for spec in specs:
        for f in reader(spec.kind).discover(spec.path):
            try:
                size = f.path.stat().st_size
            except OSError:
                continue
            tape = known.get((spec.label, f.key))
            total += size - tape.indexed_offset if tape and size >= tape.indexed_offset else size
    return total


_last_sync = 0.0


def sync_if_stale() -> None:
    """A page's cheap refresh: at most once per TAPEVIEW_REFRESH_SECONDS."""
    global _last_sync
    now = time.monotonic()
    if now - _last_sync >= settings.TAPEVIEW_REFRESH_SECONDS:
        _last_sync = now
        sync()


def _upsert(spec: SourceSpec, files: list[TapeFile]) -> list[Tape]:
    existing = {t.rel: t for t in Tape.objects.filter(source=spec.label)}
    tapes = {}
    for f in files:
        tape = existing.get(f.key) or Tape(
            key=tape_key(spec.label, f.key), source=spec.label, rel=f.key, label=f.label or f.name
        )
        seen = (spec.kind, str(f.path), f.name, f.role, f.note, f.append_only)
        changed = (tape.kind, tape.path, tape.name, tape.role, tape.note, tape.append_only) != seen
        tape.kind, tape.path, tape.name, tape.role, tape.note, tape.append_only = seen
        if f.label and tape.label != f.label:
            tape.label, changed = f.label, True
        if tape.pk is None or changed:
            tape.save()
        tapes[f.key] = tape
    for f in files:
        owner = tapes.get(f.owner) if f.owner else None
        tape = tapes[f.key]
        if tape.owner_id != (owner.pk if owner else None):
            tape.owner = owner
            tape.save(update_fields=["owner"])
    return list(tapes.values())


def _remove_gone(source: str, keys: set[str]) -> int:
    deleted, _ = Tape.objects.filter(source=source).exclude(rel__in=keys).delete()
    return deleted
