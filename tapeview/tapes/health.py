"""The health of each configured source: found, readable, last indexed, how far indexed, problems."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Case, Count, F, Max, Q, Sum, When
from django.utils import timezone

from tapeview.sources import Refusal, SourceSpec, paths, undetected, unread_folders
from tapeview.sources.model import UNREADABLE
from tapeview.sources.roots import RootLink

from .discovery import configured_sources, source_files, sync_if_stale, this_host, watcher
from .models import Indexer, SourceSize, Tape
from .signals import files_unread, search_lag


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
    indexed_bytes: int = 0
    total_bytes: int = 0
    # Entries indexed but not yet searchable: the search pass runs behind the offset index.
    search_behind: int = 0
    root: RootLink | None = None  # how the configured root reaches the folder read, when a link is on the way

    @property
    def ok(self) -> bool:
        return self.found and self.readable and not self.problems and not (self.root and self.root.trouble)

    @property
    def percent(self) -> int:
        return percent(self.indexed_bytes, self.total_bytes)


@dataclass
class Indexing:
    """How far the index is behind the files, over every source, and the watcher's heartbeat."""

    indexed_bytes: int
    total_bytes: int
    watcher: Indexer | None
    first_pass_done: bool

    @property
    def percent(self) -> int:
        return percent(self.indexed_bytes, self.total_bytes)

    @property
    def behind(self) -> bool:
        return self.indexed_bytes < self.total_bytes or (
            self.watcher is not None and not self.first_pass_done
        )

    @property
    def beat_seconds(self) -> float | None:
        if self.watcher is None or self.watcher.beat_at is None:
            return None
        return (timezone.now() - self.watcher.beat_at).total_seconds()


def percent(part: int, whole: int) -> int:
    # Floored, so 100% means caught up.
    return 100 if whole <= 0 or part >= whole else part * 100 // whole


def progress() -> dict[str, tuple[int, int]]:
    """Per source: the bytes of its files the index has read, and the bytes its files held when
    last seen (by discovery or the watcher: no file is looked at here)."""
    # A tape being indexed counts its offset so far; any other the file size it last indexed.
    read = Case(When(indexing_until__gte=timezone.now(), then=F("indexed_offset")), default=F("size"))
    indexed = {
        row["source"]: row["indexed"] or 0
        for row in Tape.objects.filter(host=this_host())
        .values("source")
        .order_by()
        .annotate(indexed=Sum(read))
    }
    seen = dict(SourceSize.objects.filter(host=this_host()).values_list("source", "total_bytes"))
    # A file that grew since it was last seen was read further than that: never past 100%.
    return {s: (indexed.get(s, 0), max(seen.get(s, 0), indexed.get(s, 0))) for s in {*indexed, *seen}}


def indexing() -> Indexing:
    """For the session index's notice: one pair of sums and the heartbeat."""
    labels = {s.label for s in configured_sources()}
    figures = [v for s, v in progress().items() if s in labels]
    beat = watcher()
    done = beat is not None and beat.pass_at is not None and beat.pass_at >= beat.started_at
    return Indexing(sum(i for i, _ in figures), sum(t for _, t in figures), beat, done)


def search_behind() -> dict[str, int]:
    """Per source, the indexed entries not yet searchable, as the search app says (tapes never import it)."""
    behind: dict[str, int] = {}
    for _, answer in search_lag.send(sender=SourceHealth):
        for source, n in answer.items():
            behind[source] = behind.get(source, 0) + n
    return behind


def others_unread() -> dict[str, list[Refusal]]:
    """Per source, the files the other apps read (memory files) and do not, as they say."""
    found: dict[str, list[Refusal]] = {}
    for _, answer in files_unread.send(sender=SourceHealth):
        for source, refused in answer.items():
            found.setdefault(source, []).extend(refused)
    return found


def source_health() -> list[SourceHealth]:
    """Each configured source as it is now (tapes found since the last look are counted)."""
    sync_if_stale()
    figures = progress()
    behind = search_behind()
    unread_elsewhere = others_unread()
    out = []
    for spec in configured_sources():
        found = spec.path.exists()
        health = SourceHealth(spec, found, found and os.access(spec.path, os.R_OK | os.X_OK))
        here = Tape.objects.filter(host=this_host(), source=spec.label)
        stats = here.aggregate(
            tapes=Count("id"), entries=Sum("entries"), unreadable=Sum("unreadable"), last=Max("indexed_at")
        )
        health.tapes, health.entries = stats["tapes"], stats["entries"] or 0
        health.unreadable, health.last_indexed = stats["unreadable"] or 0, stats["last"]
        health.indexed_bytes, health.total_bytes = figures.get(spec.label, (0, 0))
        health.search_behind = behind.get(spec.label, 0)
        health.root = spec.root_link()
        if not found:
            health.problems.append(f"{spec.path} does not exist")
        elif not health.readable:
            health.problems.append(f"{spec.path} cannot be read by this process")
        elif not spec.known:
            health.problems.append(undetected(spec))
        elif not health.tapes:
            health.problems.append(f"no {spec.kind} tapes found here")
        if found and health.readable:
            kept, refused = source_files(spec)
            refused += paths.unreadable(f.path for f in kept)
            health.problems += [str(r) for r in refused + unread_elsewhere.get(spec.label, [])]
            health.unread = unread_folders(spec)
        # (A file this process may not read is named above, with the others it may not.)
        troubled = here.filter(~Q(problem="") | Q(unreadable__gt=0)).exclude(problem=UNREADABLE)
        for tape in troubled.order_by("label")[:20]:
            what = tape.problem or f"{tape.unreadable} unreadable line(s)"
            health.problems.append(f"{tape.label}: {what}")
        out.append(health)
    return out
