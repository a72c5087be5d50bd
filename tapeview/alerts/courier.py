"""Webhook deliveries: each tried at once, then again after 2 s, twice as long each time up to 10 min,
and given up after MAX_ATTEMPTS; every try's outcome kept on its Delivery. In the watcher they are
sent by a thread of their own, so a slow or failing webhook never holds up indexing."""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.request
from datetime import timedelta

from django.db import close_old_connections, connection
from django.utils import timezone

from tapeview.outage import Outage

from .models import Delivery

log = logging.getLogger("tapeview.alerts")
_outage = Outage(log, "delivering alerts")  # the database away: one line when it goes, one when back

TIMEOUT = 5.0  # seconds a webhook has to answer one try
RETRY = 2.0  # seconds before the second try...
BACKOFF_MAX = 600.0  # ...doubling up to this
MAX_ATTEMPTS = 10
LOOK = 5.0  # seconds between looks when no pass wakes the thread (a retry falls due)
BATCH = 50

_wake = threading.Event()
_running = threading.Event()


def start(sender: object = None, stop: threading.Event | None = None, **_: object) -> threading.Thread | None:
    """The courier beside the indexer (tapes.signals.watching); it ends when `stop` is set."""
    if stop is None:
        return None
    thread = threading.Thread(target=_serve, args=(stop,), name="tapeview-alerts", daemon=True)
    _running.set()
    thread.start()
    return thread


def after_pass() -> None:
    """An evaluation may have queued deliveries: the courier's thread sends them, or (no watcher
    running: `tapeview index`, a test) they are tried here, once each."""
    if _running.is_set():
        _wake.set()
        return
    try:
        deliver_due()
    except Exception as exc:
        _outage.failed(exc)
        close_old_connections()
    else:
        _outage.passed()


def _serve(stop: threading.Event) -> None:
    try:
        while not stop.is_set():
            try:
                deliver_due(stop)
            except Exception as exc:
                pause = _outage.failed(exc)
                close_old_connections()
                stop.wait(pause)
            else:
                _outage.passed()
            _wake.wait(LOOK)
            _wake.clear()
    finally:
        _running.clear()
        connection.close()


def deliver_due(stop: threading.Event | None = None) -> int:
    """Try every delivery that is due once; how many were tried."""
    tried = 0
    while stop is None or not stop.is_set():
        now = timezone.now()
        due = list(
            Delivery.objects.filter(state=Delivery.PENDING, next_at__lte=now).order_by("next_at")[:BATCH]
        )
        for delivery in due:
            # Claimed by moving its next try past this one's time: another host's courier leaves it.
            claim = now + timedelta(seconds=TIMEOUT * 2)
            mine = Delivery.objects.filter(pk=delivery.pk, attempts=delivery.attempts, state=Delivery.PENDING)
            if mine.update(next_at=claim):
                attempt(delivery)
                tried += 1
        if len(due) < BATCH:
            return tried
    return tried


def attempt(delivery: Delivery) -> None:
    code, error = _post(delivery.url, delivery.body)
    delivery.attempts += 1
    delivery.status_code, delivery.last_error = code, error[:500]
    now = timezone.now()
    if not error:
        delivery.state, delivery.delivered_at = Delivery.DELIVERED, now
    elif delivery.attempts >= MAX_ATTEMPTS:
        delivery.state = Delivery.FAILED
        log.warning("alert webhook %s: given up after %d tries (%s)", delivery.url, delivery.attempts, error)
    else:
        pause = min(BACKOFF_MAX, RETRY * 2 ** (delivery.attempts - 1))
        delivery.next_at = now + timedelta(seconds=pause)
        log.warning("alert webhook %s: %s; trying again in %g s", delivery.url, error, pause)
    delivery.save()


def _post(url: str, body: dict) -> tuple[int | None, str]:
    """The webhook's status and what went wrong ("" for a 2xx)."""
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "Tapeview alerts"}
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
            return answer.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, f"HTTP {exc.code} {exc.reason}"
    except urllib.error.URLError as exc:
        return None, f"cannot reach the webhook: {exc.reason}"
    except (OSError, ValueError) as exc:  # a timeout, a reset connection, a URL urllib refuses
        return None, f"cannot reach the webhook: {exc}"
