"""One-time sign-in links, as Jupyter prints on first start: no default password anywhere."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from .models import SignInToken
from .roles import set_role

LINK_LIFETIME = timedelta(hours=24)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue(user: AbstractBaseUser) -> str:
    """A new single-use token for a user, which revokes the user's older unused ones; only its hash
    is stored."""
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        SignInToken.objects.filter(user=user, used_at__isnull=True).delete()
        SignInToken.objects.create(
            user=user, digest=_digest(token), expires_at=timezone.now() + LINK_LIFETIME
        )
    return token


def _live(token: str) -> QuerySet[SignInToken]:
    return SignInToken.objects.filter(
        digest=_digest(token), used_at__isnull=True, expires_at__gte=timezone.now()
    )


def holder(token: str) -> AbstractBaseUser | None:
    """The user a live token would sign in, leaving it unused; None for an unknown, used or expired one."""
    live = _live(token).select_related("user").first()
    return live.user if live is not None else None


def redeem(token: str) -> AbstractBaseUser | None:
    """The user a token signs in, once; None for an unknown, used or expired token.

    One conditional UPDATE marks the link used: of two requests with the same link at once, the
    database lets exactly one change the row, on SQLite and PostgreSQL alike.
    """
    if _live(token).update(used_at=timezone.now()) != 1:
        return None
    return SignInToken.objects.select_related("user").get(digest=_digest(token)).user


def ensure_first_admin(username: str = "admin") -> AbstractBaseUser | None:
    """Create a local admin with no usable password when there are no users at all."""
    User = get_user_model()
    if User.objects.exists():
        return None
    user = User.objects.create_user(username)
    user.set_unusable_password()
    user.save()
    set_role(user, "admin")
    return user
