"""The health of each configured source: found, readable, last indexed, problems."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Max, Q, Sum

from tapeview.sources import Refusal, SourceSpec, undetected, unread_folders

from .discovery import configured_sources, source_files, sync_if_stale
from .models import Tape


@dataclass
class SourceHealth:
    spec: SourceSpec
    found: bool
    readable: bool
    tapes: int = 0
    entries: int = 0
    unreadable: int = 0
    last_indexed: datetime | None = None
    problems: list[str] = field(default_factory=list)
    unread: list[Refusal] = field(default_factory=list)  # subfolders not read, and why

    @property
    def ok(self) -> bool:
        return self.found and self.readable and not self.problems


def source_health() -> list[SourceHealth]:
    """Each configured source as it is now (tapes found since the last look are counted)."""
    sync_if_stale()
    out = []
    for spec in configured_sources():
        found = spec.path.exists()
        health = SourceHealth(spec, found, found and os.access(spec.path, os.R_OK | os.X_OK))
        stats = Tape.objects.filter(source=spec.label).aggregate(
            tapes=Count("id"), entries=Sum("entries"), unreadable=Sum("unreadable"), last=Max("indexed_at")
        )
        health.tapes, health.entries = stats["tapes"], stats["entries"] or 0
        health.unreadable, health.last_indexed = stats["unreadable"] or 0, stats["last"]
        if not found:
            health.problems.append(f"{spec.path} does not exist")
        elif not health.readable:
            health.problems.append(f"{spec.path} cannot be read by this process")
        elif not spec.known:
            health.problems.append(undetected(spec))
        elif not health.tapes:
            health.problems.append(f"no {spec.kind} tapes found here")
        if found and health.readable:
            health.problems += [str(r) for r in source_files(spec)[1]]
            health.unread = unread_folders(spec)
        troubled = Tape.objects.filter(source=spec.label).filter(~Q(problem="") | Q(unreadable__gt=0))
        for tape in troubled.order_by("label")[:20]:
            what = tape.problem or f"{tape.unreadable} unreadable line(s)"
            health.problems.append(f"{tape.label}: {what}")
        out.append(health)
    return out
