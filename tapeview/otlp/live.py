"""The indexer's export (TAPEVIEW_OTLP_ENDPOINT): each tape's new complete turns, sent as they are indexed.

A thread of its own beside the watcher, reading what the index holds: the index never waits for
the collector. What was sent is kept per tape (`Sent`), saved after each request the collector
took, so a restart sends nothing twice; while the collector is down, the thread tries again after
2 s, then twice as long each time, up to 60 s, and the index goes on meanwhile.
"""

from __future__ import annotations

import logging
import threading
from types import ModuleType

from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import F, Q

from tapeview.tapes.models import Tape, this_host

from .models import Sent

log = logging.getLogger("tapeview.otlp")

LOOK = 2.0  # seconds between looks at the index when no indexing pass wakes the thread sooner
RETRY = 2.0  # seconds before the first try again while the collector is down...
BACKOFF_MAX = 60.0  # ...doubling up to this

_wake = threading.Event()


def start(sender: object = None, stop: threading.Event | None = None, **_: object) -> threading.Thread | None:
    """Start the export beside the indexer when a collector is configured; it ends when `stop` is set."""
    url = settings.TAPEVIEW_OTLP_ENDPOINT
    if not url or stop is None:
        return None
    # Imported here: the OpenTelemetry SDK loads only in a process that sends.
    from . import delivery

    try:
        out = delivery.exporter(url)
    except ValueError as exc:
        log.error("TAPEVIEW_OTLP_ENDPOINT: %s; nothing is sent", exc)
        return None
    export = Export(delivery, out, stop)
    thread = threading.Thread(target=export.run, name="tapeview-otlp", daemon=True)
    thread.start()
    return thread


def wake(**_: object) -> None:
    """The indexer has read what it was told of: look at the index now rather than at the next LOOK."""
    _wake.set()


class Export:
    def __init__(self, delivery: ModuleType, out, stop: threading.Event) -> None:
        self.delivery, self.out, self.stop = delivery, out, stop
        self.failures = 0

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    self.catch_up()
                except self.delivery.CollectorDown as exc:
                    self._back_off(str(exc))
                except Exception:
                    log.exception("the OTLP export failed; trying again")
                    close_old_connections()
                    self._back_off("")
                else:
                    self.failures = 0
                    _wake.wait(LOOK)
                    _wake.clear()
        finally:
            connection.close()

    def _back_off(self, why: str) -> None:
        pause = min(BACKOFF_MAX, RETRY * 2**self.failures)
        self.failures += 1
        if why:
            log.warning("%s; trying again in %g s", why, pause)
        self.stop.wait(pause)

    def catch_up(self) -> None:
        """Every tape of this host whose index moved since it was last looked at."""
        moved = (
            Tape.objects.filter(host=this_host(), indexed_at__isnull=False)
            .filter(Q(otlp_sent__isnull=True) | Q(otlp_sent__checked__lt=F("indexed_at")))
            .order_by("pk")
        )
        for tape in moved.iterator():
            if self.stop.is_set():
                return
            try:
                self.send_tape(tape)
            except (
                OSError,
                LookupError,
            ) as exc:  # the file gone or unreadable: again once it is indexed again
                log.warning("%s: not sent (%s)", tape.path, exc)
                Sent.objects.update_or_create(tape=tape, defaults={"checked": tape.indexed_at})

    def send_tape(self, tape: Tape) -> None:
        indexed_at = tape.indexed_at  # what is sent is what was indexed by then, or more
        sent = Sent.objects.filter(tape=tape).first() or Sent(tape=tape)
        for batch in self.delivery.pending(tape, sent, self.delivery.content()):
            self.delivery.send(self.out, batch.spans)
            for name, value in batch.progress.items():
                setattr(sent, name, value)
            sent.save()
        sent.checked = indexed_at
        sent.save()
