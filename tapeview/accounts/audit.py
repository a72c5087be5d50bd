"""Who writes, and the one place a write is recorded in the audit log."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.utils import timezone

from .models import AuditEvent

PENDING, WRITTEN, FAILED, NOT_WRITTEN, REFUSED = (
    AuditEvent.PENDING,
    AuditEvent.WRITTEN,
    AuditEvent.FAILED,
    AuditEvent.NOT_WRITTEN,
    AuditEvent.REFUSED,
)
# A write takes milliseconds and waits at most seconds for a lock: an intent this old, still
# pending, belongs to a writer that is gone, even one on another host or whose pid was reused.
ABANDONED_AFTER = timedelta(minutes=2)
WHY_CHARS = 300


@dataclass(frozen=True)
class Actor:
    """Who writes: a signed-in user, or a service's token."""

    name: str
    user: AbstractBaseUser | None = None

    @classmethod
    def of(cls, user: AbstractBaseUser) -> Actor:
        return cls(user.get_username(), user)


def record(
    actor: Actor,
    action: str,
    *,
    subject: str,
    target: str,
    before: str = "",
    after: str = "",
    diff: str = "",
    detail: dict | None = None,
    outcome: str = WRITTEN,
    why: str = "",
) -> AuditEvent:
    """One audit row for one write.

    A write that a crash could cut short records its intent first (`outcome` PENDING) and settles
    it afterwards (`settle`), so that no write that happened is ever missing from the log. The
    intent must be committed before the write starts: record it outside any atomic block.
    """
    return AuditEvent.objects.create(
        user=actor.user if actor.user is not None and actor.user.pk else None,
        actor=actor.name,
        subject=subject[:100],
        target=target[:500],
        action=action,
        before=before,
        after=after,
        diff=diff,
        detail=detail or {},
        outcome=outcome,
        why=why[:WHY_CHARS],
        writer=this_writer() if outcome == PENDING else "",
    )


def expect(event: AuditEvent, after: str) -> None:
    """Note the version a pending write is about to give the file (just before it does)."""
    event.after = after
    event.save(update_fields=["after"])


def settle(event: AuditEvent, outcome: str, *, why: str = "", **fields: object) -> AuditEvent:
    """What became of a pending write: WRITTEN, FAILED (an error stopped it) or NOT_WRITTEN.

    `fields`: what is known only now (after, diff, detail).
    """
    event.outcome, event.why, event.writer = outcome, why[:WHY_CHARS], ""
    for name, value in fields.items():
        setattr(event, name, value)
    # An UPDATE, not save(): settling another writer's intent (writes.settle_intents) races with
    # that writer withdrawing it, refused; a row gone meanwhile has nothing left to settle.
    changed = {"outcome": event.outcome, "why": event.why, "writer": "", **fields}
    AuditEvent.objects.filter(pk=event.pk).update(**changed)
    return event


def withdraw(event: AuditEvent) -> None:
    """Take back an intent whose write was refused before it began (a bad value, a busy tape).

    Such a refusal writes nothing and the log keeps writes, not refusals; only a pending row goes.
    A conflict is settled REFUSED instead: someone's edit met another's, and the log says so.
    """
    if event.outcome == PENDING:
        event.delete()


def intents_of(subject: str) -> QuerySet[AuditEvent]:
    """The pending rows of one store or tape, oldest first."""
    return AuditEvent.objects.filter(subject=subject, outcome=PENDING).order_by("at", "id")


def abandoned(event: AuditEvent) -> bool:
    """Whether a pending row's writer is gone: its process on this host has ended, or it is old."""
    return writer_gone(event.writer, event.at)


def writer_gone(writer: str, since: datetime | None) -> bool:
    """Whether the process `writer` (as `this_writer` named it), busy since `since`, is gone: it has
    ended on this host, or it has been at it for longer than any write takes."""
    if since is None or timezone.now() - since > ABANDONED_AFTER:
        return True
    host, _, pid = writer.rpartition(" ")
    if host != socket.gethostname() or not pid.isdigit():
        return False  # another host's writer: only its age tells
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists, under another user
    return False


def events_of(subject: str):
    """The audit rows of one store or tape, newest first."""
    return AuditEvent.objects.filter(subject=subject)


def this_writer() -> str:
    """This process, as `writer_gone` can look it up: host name and pid."""
    return f"{socket.gethostname()} {os.getpid()}"
