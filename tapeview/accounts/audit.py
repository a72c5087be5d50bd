"""Who writes, and the one place a write is recorded in the audit log."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from .models import AuditEvent


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
) -> AuditEvent:
    """One audit row for one write: call it in the same transaction as the write's other records."""
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
    )


def events_of(subject: str):
    """The audit rows of one store or tape, newest first."""
    return AuditEvent.objects.filter(subject=subject)
