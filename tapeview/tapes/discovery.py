"""Which tapes the sources hold: discover them, keep their rows, drop the gone ones, index what changed."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Concat
from django.utils import timezone

from tapeview.sources import SourceSpec, TapeFile, parse_sources, paths, reader, undetected
from tapeview.sources.paths import Refusal

from . import signals
from .index import Progress, refresh
from .models import Indexer, SourceFolder, SourceSize, Tape, this_host

BEAT_STALE = Indexer.GONE_AFTER


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


def tape_key(source: str, rel: str, host: str | None = None) -> str:
    """A tape's key: the same file of the same source on another host is another tape.

    (Rows indexed before hosts existed keep the key they had: stored, never recomputed.)
    """
    host = settings.TAPEVIEW_HOST if host is None else host
    return hashlib.blake2b(f"{host}\0{source}\0{rel}".encode(), digest_size=8).hexdigest()


def key_at(source: str, rel: str) -> str:
    """The key of this host's tape at this place: the stored one where the index has it (a relabelled
    source's tapes keep theirs), else the one its row will get."""
    stored = Tape.objects.filter(host=this_host(), source=source, rel=rel).values_list("key", flat=True)
    stored = stored.first()
    return stored or tape_key(source, rel)


@dataclass
class SyncReport:
    tapes: int = 0
    indexed: int = 0
    removed: int = 0
    problems: list[str] = field(default_factory=list)


def sync(specs: Iterable[SourceSpec] | None = None, progress: Progress | None = None) -> SyncReport:
    """Discover every tape of the sources, drop the gone ones, index what changed.

    A tape that another request or process is indexing is left to it (see index.refresh). Only
    this host's rows are touched: other hosts of a fleet keep theirs in the same database.
    """
    report = SyncReport()
    specs = list(configured_sources() if specs is None else specs)
    follow_relabels(specs)
    for spec in specs:
        if not spec.path.exists():
            report.problems.append(f"{spec.label}: {spec.path} does not exist")
        elif not spec.known:
            report.problems.append(f"{spec.label}: {undetected(spec)}")
        tapes, removed, refused, _ = discover(spec)
        report.problems += [f"{spec.label}: {r}" for r in refused]
        report.removed += removed
        for tape in tapes:
            report.tapes += 1
            if refresh(tape, progress):
                report.indexed += 1
    Tape.objects.filter(host=this_host()).exclude(source__in=[s.label for s in specs]).delete()
    return report


def follow_relabels(specs: Iterable[SourceSpec]) -> None:
    """One folder is one source whatever its label: a source given another label (same kind, same
    folder) takes over the rows of the label it had, if no spec names that one any more.

    Its tapes keep their keys, which reviews and the audit log name them by; the memory app's stores
    and search's docs follow (signals.source_relabelled). One query when no label changed.
    """
    host = this_host()
    specs = [s for s in specs if s.known]
    labels = {s.label for s in specs}
    rows = {r.source: r for r in SourceFolder.objects.filter(host=host)}
    for spec in specs:
        place = (spec.kind, str(spec.path))
        row = rows.get(spec.label)
        if row is not None and (row.kind, row.folder) == place:
            continue
        if row is None:
            before = [r.source for r in rows.values() if (r.kind, r.folder) == place]
            before = [label for label in before if label not in labels]
            old = before[0] if before else _labelled_before(spec, labels | rows.keys())
            if old is not None:
                relabel(old, spec.label)
                rows.pop(old, None)
        rows[spec.label], _ = SourceFolder.objects.update_or_create(
            host=host, source=spec.label, defaults={"kind": place[0], "folder": place[1]}
        )


def _labelled_before(spec: SourceSpec, excluded: set[str]) -> str | None:
    """The label this folder's tapes were indexed under before folders were recorded (a database of an
    earlier version): a label no spec names, whose tapes are this folder's files, and only them."""
    host, prefix = this_host(), str(spec.path).rstrip(os.sep) + os.sep
    if Tape.objects.filter(host=host, source=spec.label).exists():
        return None
    inside = Tape.objects.filter(host=host, kind=spec.kind).exclude(source__in=excluded)
    inside = inside.annotate(place=Concat(Value(prefix), F("rel"))).filter(path=F("place"))
    found = list(inside.values_list("source", flat=True).distinct()[:2])
    if len(found) != 1:
        return None
    elsewhere = Tape.objects.filter(host=host, source=found[0]).exclude(path__startswith=prefix)
    return None if elsewhere.exists() else found[0]


def relabel(old: str, new: str) -> None:
    """This host's source `old` is called `new` from now on: its rows move over, but where `new` has
    a row of the same file already (those stay `old`'s, and go as a source no longer configured)."""
    host = this_host()
    with transaction.atomic():
        taken = Tape.objects.filter(host=host, source=new).values("rel")
        moved = Tape.objects.filter(host=host, source=old).exclude(rel__in=taken)
        tape_ids = list(moved.values_list("pk", flat=True))
        Tape.objects.filter(pk__in=tape_ids).update(source=new)
        SourceSize.objects.filter(host=host, source=old).delete()  # discovery records the new label's
        SourceFolder.objects.filter(host=host, source=old).delete()
        signals.source_relabelled.send(sender=SourceFolder, host=host, old=old, new=new, tape_ids=tape_ids)


def discover(spec: SourceSpec) -> tuple[list[Tape], int, list[Refusal], dict[str, int]]:
    """A source's tape rows brought in step with its files, without reading them: the tapes, how
    many rows were gone, the refusals, and each file's size (recorded for the progress figures)."""
    files, refused = source_files(spec)
    tapes = _upsert(spec, files)
    removed = _remove_gone(spec.label, {f.key for f in files})
    sizes = {}
    for f in files:
        try:
            sizes[f.key] = os.stat(f.path).st_size
        except OSError:
            continue  # gone since the listing: the next look drops it
    record_sizes(spec.label, sizes)
    return tapes, removed, refused, sizes


def record_sizes(source: str, sizes: dict[str, int]) -> None:
    SourceSize.objects.update_or_create(
        host=this_host(),
        source=source,
        defaults={"files": len(sizes), "total_bytes": sum(sizes.values()), "seen_at": timezone.now()},
    )


def source_files(spec: SourceSpec) -> tuple[list[TapeFile], list[Refusal]]:
    """The files of a source that may be read, and the refusals of the path policy."""
    if not spec.known:
        return [], []  # nothing is read until the kind is known (see sync's problems)
    return paths.admit(spec.path, reader(spec.kind).discover(spec.path))


def pending_bytes(specs: Iterable[SourceSpec]) -> int:
    """How many bytes an index run would read (for a progress bar)."""
    total = 0
    known = {(t.source, t.rel): t for t in Tape.objects.filter(host=this_host())}
    for spec in specs:
        for f in source_files(spec)[0]:
            try:
                size = f.path.stat().st_size
            except OSError:
                continue
            tape = known.get((spec.label, f.key))
            total += size - tape.indexed_offset if tape and size >= tape.indexed_offset else size
    return total


_last_sync = 0.0
_syncing = threading.Lock()


def sync_if_stale() -> None:
    """A page's cheap refresh: at most once per TAPEVIEW_REFRESH_SECONDS, and never waiting."""
    global _last_sync
    now = time.monotonic()
    if not settings.TAPEVIEW_WEB_INDEXES or now - _last_sync < settings.TAPEVIEW_REFRESH_SECONDS:
        return  # (a web tier of a fleet: another process keeps the index, pages only read it)
    if watcher() is not None:
        _last_sync = now  # the watcher keeps every source indexed: pages only read the index
        return
    # A thread of this process is syncing already: this page shows what is indexed (principle 8).
    # Other processes may sync at once; their writes are safe together (get_or_create, leases).
    if not _syncing.acquire(blocking=False):
        return
    try:
        _last_sync = now
        sync()
    finally:
        _syncing.release()


def watcher() -> Indexer | None:
    """This host's running watcher's heartbeat, or None when none has beaten lately."""
    return Indexer.objects.filter(host=this_host(), beat_at__gte=timezone.now() - BEAT_STALE).first()


def beat(*, started: bool = False, passed: bool = False, mode: str = "") -> None:
    """The watcher's heartbeat: alive now (and, with `passed`, done with a pass over every source)."""
    now = timezone.now()
    fields: dict[str, object] = {"beat_at": now, "pid": os.getpid()}
    if started:
        fields.update(started_at=now, pass_at=None)
    if passed:
        fields["pass_at"] = now
    if mode:
        fields["mode"] = mode
    if not Indexer.objects.filter(host=this_host()).update(**fields):
        Indexer.objects.get_or_create(host=this_host(), defaults={"started_at": now, **fields})


def stop_beating() -> None:
    """A watcher that stops says so: pages look at the files themselves again at once."""
    Indexer.objects.filter(host=this_host(), pid=os.getpid()).update(beat_at=None)


def _upsert(spec: SourceSpec, files: list[TapeFile]) -> list[Tape]:
    host = this_host()
    existing = {t.rel: t for t in Tape.objects.filter(host=host, source=spec.label)}
    tapes = {}
    # New tapes get their ids oldest file first, as a watcher running all along would have given them:
    # search takes the newest matches by id (search.backends), after a cold index too.
    fresh = sorted((f for f in files if f.key not in existing), key=_modified)
    for f in [*(f for f in files if f.key in existing), *fresh]:
        # What discovery owns of a tape's row (with label and owner); the indexer owns the rest.
        seen = {
            "kind": spec.kind,
            "path": str(f.path),
            "name": f.name,
            "role": f.role,
            "note": f.note,
            "append_only": f.append_only,
            "configured_model": f.model,
            "configured_window": f.window,
        }
        tape = existing.get(f.key)
        if tape is None:
            tape = _add(spec.label, f, {"label": f.label or f.name, **seen})
        changed = {name: value for name, value in seen.items() if getattr(tape, name) != value}
        if f.label and tape.label != f.label:
            changed["label"] = f.label
        if f.workdir and tape.workdir != f.workdir:  # kept while the file that names it is unreadable
            changed["workdir"] = f.workdir
        if changed:
            _update(tape, **changed)
        tapes[f.key] = tape
    for f in files:
        owner = tapes.get(f.owner) if f.owner else None
        tape = tapes[f.key]
        if tape.owner_id != (owner.pk if owner else None):
            _update(tape, owner=owner)
    return [tapes[f.key] for f in files]


def _add(source: str, f: TapeFile, fields: dict[str, object]) -> Tape:
    host = this_host()
    key = tape_key(source, f.key, host)
    while True:
        try:
            # Another request may be adding the same file right now: whichever row wins is the tape.
            return Tape.objects.get_or_create(
                host=host, source=source, rel=f.key, defaults={"key": key, **fields}
            )[0]
        except IntegrityError:
            if not Tape.objects.filter(key=key).exists():
                raise
            # A relabelled source's tape keeps the key its old label gave it: a new source with that
            # label gets another for the same file name.
            key = hashlib.blake2b(key.encode(), digest_size=8).hexdigest()


def _modified(f: TapeFile) -> tuple[int, str]:
    try:
        return os.stat(f.path).st_mtime_ns, f.key
    except OSError:
        return 0, f.key  # gone since the listing: the next look drops it


def _update(tape: Tape, **fields: object) -> None:
    """Write only what discovery owns: an indexer may be saving newer progress to the row meanwhile."""
    for name, value in fields.items():
        setattr(tape, name, value)
    # An UPDATE, not save(): the row may be gone already (another sync found the file gone).
    Tape.objects.filter(pk=tape.pk).update(**fields)


def _remove_gone(source: str, keys: set[str]) -> int:
    _, deleted = Tape.objects.filter(host=this_host(), source=source).exclude(rel__in=keys).delete()
    return deleted.get(Tape._meta.label, 0)  # the tapes, not their entry rows and anchors
