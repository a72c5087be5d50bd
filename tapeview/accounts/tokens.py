"""API tokens for services: created once in plaintext, kept as a hash, checked on every API call."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from .models import ApiToken

PREFIX = "tv_"  # recognisable in logs and by secret scanners
SHOWN = 10  # characters of a token kept for display: the prefix and a few more
NAME = re.compile(r"^[\w.@+-]{1,100}$")
NAME_RULE = "a token name is 1 to 100 letters, digits or . @ + - _ (no spaces)"
# last_used_at is a hint for the admin, not an audit: one UPDATE a minute per token is plenty.
TOUCH_EVERY = timedelta(minutes=1)


class TokenError(ValueError):
    """A token that cannot be created or revoked as asked."""


def _digest(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def create(
    name: str,
    scope: str = ApiToken.READ,
    *,
    created_by: AbstractBaseUser | None = None,
    expires_days: int | None = None,
) -> tuple[ApiToken, str]:
    """A new token and its plaintext, which is never stored and cannot be shown again."""
    if not NAME.match(name or ""):
        raise TokenError(NAME_RULE)
    if scope not in (ApiToken.READ, ApiToken.WRITE, ApiToken.METRICS):
        raise TokenError(f"unknown scope {scope!r} (read, write or metrics)")
    if expires_days is not None and not 1 <= expires_days <= 36500:
        raise TokenError("--expires-days must be between 1 and 36500")
    plaintext = PREFIX + secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
    try:
        with transaction.atomic():
            row = ApiToken.objects.create(
                name=name,
                scope=scope,
                digest=_digest(plaintext),
                prefix=plaintext[:SHOWN],
                created_by=created_by if created_by is not None and created_by.pk else None,
                expires_at=expires_at,
            )
    except IntegrityError:
        raise TokenError(f"a live token named {name!r} exists already: revoke it first") from None
    return row, plaintext


def verify(plaintext: str) -> ApiToken | None:
    """The live token with this plaintext, or None (unknown, expired or revoked)."""
    if not plaintext or not plaintext.startswith(PREFIX) or len(plaintext) > 200:
        return None
    row = ApiToken.objects.filter(digest=_digest(plaintext)).first()
    now = timezone.now()
    if row is None or row.revoked_at is not None or (row.expires_at and row.expires_at <= now):
        return None
    if row.last_used_at is None or now - row.last_used_at >= TOUCH_EVERY:
        row.last_used_at = now
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row


def find(ref: str) -> ApiToken:
    """A token by id, or the live token of that name (LookupError if there is none)."""
    is_id = ref.isascii() and ref.isdigit() and len(ref) < 18
    found = ApiToken.objects.filter(pk=int(ref)).first() if is_id else None
    found = found or ApiToken.objects.filter(name=ref, revoked_at__isnull=True).first()
    if found is None:
        raise LookupError(f"no live token {ref!r}")
    return found


def revoke(token: ApiToken) -> ApiToken:
    """Stop a token working from now on; revoking twice keeps the first time."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def audited(token: ApiToken) -> dict:
    """What the audit log says of a token created or revoked: never the token itself."""
    until = f"{token.expires_at:%Y-%m-%d}" if token.expires_at else "no expiry"
    return {
        "subject": f"token:{token.name}",
        "target": f"API token {token.name} ({token.scope}, {until})",
        "detail": {"id": token.pk, "scope": token.scope, "prefix": token.prefix},
    }


def state(token: ApiToken) -> str:
    """live, expired or revoked, as the token list shows it."""
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and token.expires_at <= timezone.now():
        return "expired"
    return "live"
