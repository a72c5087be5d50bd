"""The outbox loop of a host's watcher: wait for a request (LISTEN, or a short poll), carry it out."""

from __future__ import annotations

import logging
import threading
import time
from importlib import import_module

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connection, connections

from tapeview.outage import Outage

from . import queue

log = logging.getLogger("tapeview.outbox")

POLL = 0.5  # seconds between looks where nothing wakes the loop (SQLite has no NOTIFY)
LISTEN_FOR = 1.0  # seconds of waiting for a NOTIFY before looking anyway (and at the stop event)
BEAT = 5.0  # seconds between heartbeats (queue.unseen looks at them)


def serve(stop: threading.Event) -> None:
    """Carry out this host's requests until `stop` is set; every failure is logged and outlived,
    with pauses that double while the database stays out of reach."""
    # The handlers are registered by the modules that define the writes, and the API's error
    # answers by the API: the site's URLconf imports them all, as it does in the web process.
    import_module(settings.ROOT_URLCONF)
    listener = None
    last_beat = 0.0
    outage = Outage(log, "the outbox")
    try:
        while not stop.is_set():
            try:
                if time.monotonic() - last_beat >= BEAT:
                    queue.beat()
                    queue.give_up_abandoned()
                    last_beat = time.monotonic()
                _drain(stop)
                if connection.vendor == "postgresql":
                    listener = listener or _listen()
                    for _ in listener.connection.notifies(timeout=LISTEN_FOR, stop_after=1):
                        pass
                else:
                    stop.wait(POLL)
            except Exception as exc:
                _close(listener)
                listener = None
                close_old_connections()  # a connection the database dropped: the next query opens a new one
                stop.wait(outage.failed(exc))
            else:
                outage.passed()
    finally:
        _guarded(queue.stop_beating)
        _close(listener)
        connection.close()


def _drain(stop: threading.Event) -> None:
    """Every queued request of this host, oldest first."""
    while not stop.is_set():
        claimed = queue.claim()
        if claimed is None:
            return
        log.info("carrying out %s (%s) for %s", claimed.action, claimed.key, claimed.actor)
        queue.carry_out(claimed)


def _listen():
    """A connection of its own, LISTENing on the outbox's channel (NOTIFY wakes it at once)."""
    listener = connections.create_connection(DEFAULT_DB_ALIAS)
    listener.ensure_connection()
    listener.connection.execute(f"LISTEN {queue.CHANNEL}")
    return listener


def _close(listener) -> None:
    if listener is not None:
        try:
            listener.close()
        except Exception:
            log.exception("closing the outbox listener failed")


def _guarded(work) -> None:
    try:
        work()
    except Exception:
        log.exception("the outbox loop failed; carrying on")
        close_old_connections()  # a connection the database dropped: the next query opens a new one
