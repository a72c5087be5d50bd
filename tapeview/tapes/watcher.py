"""`tapeview index --watch`: one indexer keeps every source indexed as agents append.

File-system notifications through watchfiles (polling where notifications are unavailable, or
when asked), a full pass every `full_every` seconds as a safety net, and a heartbeat in the
database (discovery.beat) so that pages leave the scanning to it. After each batch of refreshes,
the follow-up work: the fleet's file copies (`keep_copies`), then the search pass.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from django.db import close_old_connections, connection
from watchfiles import Change, watch

from tapeview.outage import RETRY, Outage
from tapeview.outbox import worker as outbox
from tapeview.sources import SourceSpec

from . import discovery, filecopy, index, signals
from .index import refresh
from .models import Tape

log = logging.getLogger("tapeview.watcher")

BEAT = 2.0  # seconds between heartbeats, also in the middle of a long pass
STEP_MS = 100  # a burst of changes is one batch once the files are this quiet...
DEBOUNCE_MS = 1000  # ...or once it has lasted this long
POLLING_ENV = "TAPEVIEW_WATCH_POLLING"
OUTBOX_JOIN = 10.0  # seconds a stopping watcher lets a write under way finish
FOLLOW_UP = 1.0  # seconds of follow-up work (the search pass) per quiet moment: changes wait no longer
BEHIND = 0.05  # seconds a quiet moment lasts while the search pass has more to do (else BEAT)


class Watcher:
    """Watch the sources' folders until `stop` is set; every failure is logged and outlived."""

    def __init__(
        self,
        specs: Iterable[SourceSpec],
        stop: threading.Event,
        *,
        full_every: float = 300.0,
        polling: bool = False,
    ) -> None:
        self.specs = list(specs)
        self.stop = stop
        self.full_every = full_every
        polling = polling or os.environ.get(POLLING_ENV, "").lower() in ("1", "true", "yes", "on")
        # None lets watchfiles choose (notifications, or WATCHFILES_FORCE_POLLING); True polls.
        self.force_polling: bool | None = True if polling else None
        self.sizes: dict[str, dict[str, int]] = {}  # per source: each file's size as last seen
        self.last_beat = 0.0
        self.last_full = 0.0
        self.outage = Outage(log, "indexing")  # steps failed in a row (_guarded backs off)
        self.held: dict[int, Tape] = {}  # tapes with work that another indexer held (`_retry_held`)
        self.uncopied: dict[int, Tape] = {}  # tapes refreshed since the last copy pass (`keep_copies`)
        self.scan_until = 0.0  # while neither way can watch the folders: look at the files every BEAT
        self.behind = True  # the search pass made docs in its last slice (may have more): at first, say so

    @property
    def mode(self) -> str:
        if time.monotonic() < self.scan_until:
            return "scanning"
        return "polling" if self.force_polling else "notifications"

    def run(self) -> None:
        """The loop; closes this thread's database connection when it ends.

        Beside it, in a thread of its own, the outbox loop carries out the writes that web tiers
        queue for this host's files (a write waits for no indexing pass).
        """
        courier = threading.Thread(
            target=outbox.serve, args=(self.stop,), name="tapeview-outbox", daemon=True
        )
        courier.start()
        signals.watching.send(sender=Watcher, stop=self.stop)
        try:
            self._guarded(lambda: discovery.beat(started=True, mode=self.mode))
            self._guarded(self.full_pass)
            while not self.stop.is_set():
                self._watch()
        finally:
            self._guarded(discovery.stop_beating)
            connection.close()
            courier.join(OUTBOX_JOIN)

    def _watch(self) -> None:
        roots, behind = self._roots(), self.behind
        quiet = BEHIND if behind else BEAT  # the search pass's slices follow one another while behind
        if not roots:  # no source folder exists (yet): look again now and then
            self.stop.wait(quiet)
            self._tick()
            return
        if time.monotonic() < self.scan_until:
            # Neither notifications nor polling could watch these folders (a link loop in one): what
            # changed is found by looking at the files (a tape that did not change costs a stat).
            self.stop.wait(quiet)
            self._guarded(self.catch_up)
            self._tick()
            return
        try:
            changes_seen = watch(
                *roots,
                stop_event=self.stop,
                step=STEP_MS,
                debounce=DEBOUNCE_MS,
                rust_timeout=int(quiet * 1000),
                yield_on_timeout=True,
                force_polling=self.force_polling,
                ignore_permission_denied=True,
                raise_interrupt=False,
            )
            for n, changes in enumerate(changes_seen):
                if n == 0:
                    # Watching from now on: what changed between the first pass and now is caught here.
                    self._guarded(self.catch_up)
                if changes:
                    self._guarded(lambda changes=changes: self.apply(changes))
                self._tick()
                deleted = any(c is Change.deleted and p in roots for c, p in changes)
                if self._roots() != roots or deleted or self.behind != behind:
                    # A source folder appeared or went away, or was removed and made again before we
                    # looked: the old watch never hears from the new folder. Watch the new set (also
                    # when the search pass fell behind or caught up: its quiet moments change).
                    return
        except Exception as exc:
            # Notifications unavailable (no inotify, the watch limit reached...) or a folder gone
            # under the watch: fall back to polling. Polling failed too (watchfiles refuses a folder
            # with a link loop either way): look at the files every BEAT, and try watching again
            # after a full pass's time. Said once each time, not at every try.
            failed = f"watching {', '.join(roots)} failed ({type(exc).__name__}: {exc})"
            if isinstance(exc, RuntimeError) and str(exc).startswith("Unable to decode path"):
                # watchfiles' WatchfilesRustInternalError (a private module's) for a name that is not UTF-8
                # (a file not read: paths.refusal): it ends a watch at its first change, notified or
                # polled alike, so no reason to watch another way. What else changed then is in the files.
                self._guarded(self.catch_up)
            elif self.force_polling is None:
                self.force_polling = True
                log.warning("%s; watching by polling from now on", failed)
            else:
                self.scan_until = time.monotonic() + self.full_every
                log.warning(
                    "%s; looking at the files every %g s for the next %g s", failed, BEAT, self.full_every
                )
            self.stop.wait(RETRY)
            self._tick()

    def _roots(self) -> list[str]:
        return [str(s.path) for s in self.specs if s.known and s.path.is_dir()]

    def _tick(self) -> None:
        if time.monotonic() - self.last_full >= self.full_every:
            self._guarded(self.full_pass)
        self._guarded(self._retry_held)
        self._guarded(self.keep_copies)
        self._guarded(self._follow_up)
        self._beat()

    def _follow_up(self) -> None:
        """The search pass, for at most FOLLOW_UP seconds: still behind while it makes docs."""
        answers = signals.indexer_idle.send(sender=Watcher, budget=FOLLOW_UP)
        self.behind = any(isinstance(made, int) and made > 0 for _, made in answers)

    def _beat(self, *_: object) -> None:
        if time.monotonic() - self.last_beat >= BEAT:
            self.last_beat = time.monotonic()
            self._guarded(lambda: discovery.beat(mode=self.mode))

    def _guarded(self, work) -> None:
        """Run a step of the loop; an error is logged and the loop goes on after a pause that doubles
        while the failures last (the database down: the index resumes from its byte offsets)."""
        try:
            work()
        except Exception as exc:
            # A connection the database dropped (a restart, a network cut) stays broken: close it,
            # and the next query opens a new one.
            close_old_connections()
            self.stop.wait(self.outage.failed(exc))
            self.last_full = min(self.last_full, time.monotonic() - self.full_every + RETRY * 5)
        else:
            if connection.connection is not None:  # the step reached the database: it is back, if it was away
                self.outage.passed()

    def full_pass(self) -> None:
        """Every source discovered first (so new tapes are listed at once), then indexed."""
        self.last_full = time.monotonic()
        discovery.follow_relabels(self.specs)
        tapes: list[Tape] = []
        for spec in self.specs:
            found, _, _, self.sizes[spec.label] = discovery.discover(spec)
            tapes += found
            self._beat()
        # Only this host's: in a fleet, other hosts' watchers index into the same database.
        labels = [s.label for s in self.specs]
        Tape.objects.filter(host=discovery.this_host()).exclude(source__in=labels).delete()
        # The least indexed first: a new source's tapes become readable before old ones are re-checked.
        for tape in sorted(tapes, key=lambda t: t.indexed_at is not None):
            if self.stop.is_set():
                return
            self._refresh_one(tape)
            self._beat()
        self.keep_copies()
        # As `tapeview index` does: the memory app brings its stores up to date (every source at
        # once: it drops the stores of sources it is not given).
        signals.sources_indexed.send(sender=discovery.SyncReport, specs=self.specs)
        discovery.beat(passed=True, mode=self.mode)

    def catch_up(self) -> None:
        """What changed before this watch began (since the first pass, or while a folder was away)."""
        for spec in self.specs:
            found, _, _, self.sizes[spec.label] = discovery.discover(spec)
            self._refresh(spec, found)  # a tape that did not change costs a stat

    def apply(self, changes: set[tuple[Change, str]]) -> None:
        """Refresh the tapes whose files changed; discover a source again where files came or went."""
        touched: dict[str, tuple[SourceSpec, set[str], bool]] = {}
        for change, path in changes:
            spec = self._source_of(path)
            if spec is None:
                continue
            _, paths, again = touched.get(spec.label, (spec, set(), False))
            if change is not Change.modified or not Path(path).is_dir():
                paths.add(path)
            touched[spec.label] = (spec, paths, again or change is not Change.modified)
        for spec, paths, again in touched.values():
            known = list(Tape.objects.filter(host=discovery.this_host(), source=spec.label, path__in=paths))
            if again or len(known) < len(paths):
                # A path the index does not know: a new file, or a known one seen through a link
                # (`loop -> ..` reports `bub/loop/bub/x.jsonl`), found as the file whose size moved.
                before = self.sizes.get(spec.label, {})
                found, _, _, now = discovery.discover(spec)
                self.sizes[spec.label] = now
                known = [
                    t
                    for t in found
                    if t.path in paths or t.indexed_at is None or before.get(t.rel) != now.get(t.rel)
                ]
            self._refresh(spec, known)

    def _refresh(self, spec: SourceSpec, tapes: Iterable[Tape]) -> None:
        sizes = self.sizes.setdefault(spec.label, {})
        for tape in tapes:
            if self.stop.is_set():
                return
            self._refresh_one(tape)
            try:  # after the refresh: a later append is a later change, and its own batch
                sizes[tape.rel] = os.stat(tape.path).st_size
            except OSError:
                sizes.pop(tape.rel, None)
        discovery.record_sizes(spec.label, sizes)

    def keep_copies(self) -> None:
        """Where a fleet's web tier reads copies: those of the tapes refreshed since the last time brought up
        to their files (filecopy.keep_tapes, off the index's path); a failure's full pass keeps the rest."""
        while self.uncopied and not self.stop.is_set():
            filecopy.keep_tapes([self.uncopied.pop(next(iter(self.uncopied)))])
            self._beat()

    def _refresh_one(self, tape: Tape) -> None:
        if filecopy.enabled():
            self.uncopied[tape.pk] = tape  # even unchanged: a page may have indexed what it has not copied
        try:
            if not refresh(tape, self._beat) and index.behind(tape):
                # Another indexer holds the tape (a page, or a watcher killed mid-pass whose lease
                # has yet to run out): no change may come to wake us, so look again at every tick.
                self.held[tape.pk] = tape
        except OSError as exc:  # unreadable now (permissions, replaced mid-read): the next change retries
            log.warning("%s: %s", tape.path, exc)

    def _retry_held(self) -> None:
        for tape in list(self.held.values()):
            del self.held[tape.pk]
            try:
                tape.refresh_from_db()
            except Tape.DoesNotExist:
                continue
            self._refresh_one(tape)

    def _source_of(self, path: str) -> SourceSpec | None:
        """The source whose folder holds `path`: the deepest, where one source's folder is in another's."""
        holding = [s for s in self.specs if path.startswith(str(s.path).rstrip(os.sep) + os.sep)]
        return max(holding, key=lambda s: len(str(s.path)), default=None)


def start_in_background(
    specs: Iterable[SourceSpec], **options: object
) -> tuple[threading.Thread, threading.Event]:
    """The watcher in a daemon thread of this process (with its own database connection)."""
    stop = threading.Event()
    watcher = Watcher(specs, stop, **options)  # type: ignore[arg-type]
    thread = threading.Thread(target=watcher.run, name="tapeview-watcher", daemon=True)
    thread.start()
    return thread, stop
