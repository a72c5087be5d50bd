"""The outbox's requests: submitted by the web tier, claimed and carried out by the owning host's watcher.

A request is claimed with SELECT ... FOR UPDATE SKIP LOCKED, so two watchers of one host never
carry out the same request. A request whose watcher died while carrying it out is reported
failed, never run again: a handoff may be on the tape already, and a second one would double it
(the audit log says whether it was written).
"""

from __future__ import annotations

import math
import os
import time
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from tapeview import outage
from tapeview.accounts import audit
from tapeview.accounts.audit import Actor

from . import handlers
from .handlers import Result
from .models import Courier, Request

CHANNEL = "tapeview_outbox"
POLL = 0.1  # seconds between looks at a request the web side waits for
# A host's outbox loop beats every few seconds; quieter than this, the host counts as unseen.
UNSEEN_AFTER = timedelta(minutes=1)
# How long a write may wait for a tape kept busy by this process's own write just before.
BUSY_RETRY = timedelta(seconds=30)
# What this process wrote last, and when (time.monotonic): subject -> when.
_written: dict[str, float] = {}


def elsewhere(host: str) -> bool:
    """Whether a write to a file on `host` goes through the outbox (it is not this process's host)."""
    return host != settings.TAPEVIEW_HOST


def submit(
    host: str, action: str, params: dict, actor: Actor, *, subject: str, target: str, page: str = ""
) -> Request:
    """Queue a write for `host`'s watcher, wake it (PostgreSQL NOTIFY), and record it in the audit log."""
    if not handlers.known(action):
        raise LookupError(f"no outbox handler for {action!r}")
    user = actor.user if actor.user is not None and actor.user.pk else None
    with transaction.atomic():
        queued = Request.objects.create(
            host=host,
            action=action,
            params=params,
            actor=actor.name,
            user=user,
            subject=subject,
            target=target,
            page=page,
        )
        if connection.vendor == "postgresql":  # delivered at commit
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, host])
    _audit(queued, actor, "outbox.queued", audit.NOT_WRITTEN, f"queued for host {host}")
    return queued


def wait(queued: Request, seconds: float) -> Request:
    """The request as it is once finished, or after `seconds` (still queued or running)."""
    deadline = time.monotonic() + seconds
    while True:
        queued.refresh_from_db()
        if queued.finished or time.monotonic() >= deadline:
            return queued
        time.sleep(POLL)


class NotCancellable(Exception):
    """The request is running or finished already: it cannot be taken back."""


def cancel(queued: Request, actor: Actor) -> Request:
    """Take back a queued request so that no watcher carries it out (NotCancellable once claimed)."""
    taken = Request.objects.filter(pk=queued.pk, state=Request.QUEUED).update(
        state=Request.CANCELLED, cancelled_by=actor.name, finished_at=timezone.now()
    )
    queued.refresh_from_db()
    if not taken:
        raise NotCancellable(f"this request is {queued.state}: only a queued request can be cancelled")
    _audit(
        queued, actor, "outbox.cancelled", audit.NOT_WRITTEN, f"cancelled before host {queued.host} ran it"
    )
    return queued


def claim(host: str | None = None) -> Request | None:
    """The oldest queued request of this host, now running for this process (None when none is)."""
    host = settings.TAPEVIEW_HOST if host is None else host
    with transaction.atomic():
        queued = (
            Request.objects.select_for_update(skip_locked=True)
            .filter(host=host, state=Request.QUEUED)
            .order_by("created_at", "id")
            .first()
        )
        if queued is None:
            return None
        queued.state, queued.claimed_at = Request.RUNNING, timezone.now()
        queued.claimed_by = audit.this_writer()
        queued.save(update_fields=["state", "claimed_at", "claimed_by"])
    return queued


def carry_out(queued: Request) -> Request:
    """Run a claimed request's handler, in its actor's name, and keep what it answered.

    A write refused busy where this process wrote the same thing just before (two handoffs queued
    for one tape: the second finds the tape written by the first) is tried again after its
    Retry-After, while that falls within BUSY_RETRY; a tape busy with its agent is answered 409 at
    once, as the synchronous endpoint answers it."""
    actor = actor_of(queued)
    result = handlers.run(queued.action, queued.params, actor)
    now, wait = time.monotonic(), BUSY_RETRY.total_seconds()
    ours = now - _written.get(queued.subject, -math.inf) < wait  # busy with what we wrote, if busy
    while ours and (pause := _busy_for(result)) is not None and time.monotonic() + pause <= now + wait:
        time.sleep(pause)
        result = handlers.run(queued.action, queued.params, actor)
    if result.ok:
        _written[queued.subject] = time.monotonic()
    _finish(queued, result)
    queued.refresh_from_db()
    return queued


def actor_of(queued: Request) -> Actor:
    """The actor the web side wrote the request for (the user row, when there is one)."""
    user = get_user_model().objects.filter(pk=queued.user_id).first() if queued.user_id else None
    return Actor(queued.actor, user)


def give_up_abandoned(host: str | None = None) -> int:
    """Report failed the requests of this host whose watcher died while running them.

    Failed, not queued again: the write may have happened (see the module's docstring).
    """
    host = settings.TAPEVIEW_HOST if host is None else host
    gone = 0
    for queued in Request.objects.filter(host=host, state=Request.RUNNING):
        if _abandoned(queued):
            why = (
                f"the watcher of host {host} stopped while carrying this out: "
                "the audit log says whether it was written"
            )
            gone += _finish(queued, Result(500, {"detail": why}, reason=why)) is not None
    return gone


def beat() -> None:
    """This host's outbox loop is listening (what unseen() looks at)."""
    Courier.objects.update_or_create(
        host=settings.TAPEVIEW_HOST,
        defaults={"beat_at": timezone.now(), "pid": os.getpid(), "stopped": False},
    )


def stop_beating() -> None:
    """A loop that stops says so: its host's requests are reported queued on an unseen host at once."""
    Courier.objects.filter(host=settings.TAPEVIEW_HOST, pid=os.getpid()).update(stopped=True)


def unseen(host: str) -> str:
    """Why `host` may not carry out its requests soon ("" when its outbox loop beats)."""
    courier = Courier.objects.filter(host=host).first()
    if courier is None:
        return f"host {host} has never been seen: the request is queued"
    if not courier.stopped and timezone.now() - courier.beat_at <= UNSEEN_AFTER:
        return ""
    return f"host {host} has not been seen for {outage.since(courier.beat_at)}: the request is queued"


def _finish(queued: Request, result: Result) -> Request | None:
    """Keep a request's answer, and record its outcome in the audit log."""
    state = Request.FAILED if result.status >= 500 else Request.DONE
    fields = {
        "state": state,
        "finished_at": timezone.now(),
        "status": result.status,
        "body": result.body,
        "headers": result.headers,
        "reason": result.reason,
    }
    # Only a running request: one given up meanwhile (its watcher looked dead) keeps its answer.
    if not Request.objects.filter(pk=queued.pk, state=Request.RUNNING).update(**fields):
        return None
    queued.refresh_from_db()
    if result.ok:
        outcome, why = audit.WRITTEN, f"carried out on host {queued.host}"
    else:
        outcome, why = (audit.FAILED if state == Request.FAILED else audit.NOT_WRITTEN), _detail(result)
    _audit(queued, actor_of(queued), f"outbox.{state}", outcome, why)
    return queued


def _busy_for(result: Result) -> float | None:
    """Seconds to wait before trying a busy write again (None: not busy, or its agent looks stopped,
    which only an operator's confirmation gets past)."""
    body = result.body if isinstance(result.body, dict) else {}
    if result.status != 409 or body.get("stopped") or not isinstance(body.get("retry_after"), int | float):
        return None
    return float(body["retry_after"])


def _detail(result: Result) -> str:
    detail = result.body.get("detail") if isinstance(result.body, dict) else None
    return f"{result.status}: {detail if isinstance(detail, str) else result.reason}"


def _audit(queued: Request, actor: Actor, action: str, outcome: str, why: str) -> None:
    """One row of the request itself (the write, where it audits itself, has its own rows)."""
    audit.record(
        actor,
        action,
        subject=queued.subject,
        target=queued.target,
        detail={"request": queued.key, "host": queued.host, "action": queued.action},
        outcome=outcome,
        why=why,
    )


def _abandoned(queued: Request) -> bool:
    """Whether a running request's watcher is gone: its process here has ended, or it is old."""
    return audit.writer_gone(queued.claimed_by, queued.claimed_at)
