"""Roles: viewer reads, operator also writes, admin also manages users and tokens."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

ROLES = ("viewer", "operator", "admin")


def role_of(user: AbstractBaseUser | AnonymousUser) -> str | None:
    """The strongest role a user holds; a superuser is an admin."""
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return "admin"
    names = set(user.groups.values_list("name", flat=True))
    for role in reversed(ROLES):
        if role in names:
            return role
    return "viewer"


def has_role(user: AbstractBaseUser | AnonymousUser, role: str) -> bool:
    held = role_of(user)
    return held is not None and ROLES.index(held) >= ROLES.index(role)


def set_role(user: AbstractBaseUser, role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r} (known: {', '.join(ROLES)})")
    user.groups.remove(*Group.objects.filter(name__in=ROLES))
    user.groups.add(Group.objects.get_or_create(name=role)[0])


def role_required(role: str) -> Callable:
    """A view decorator: 403 for a signed-in user without the role."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs):
            if not has_role(request.user, role):
                raise PermissionDenied(f"this needs the {role} role")
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


def role_context(request: HttpRequest) -> dict:
    role = role_of(request.user) if hasattr(request, "user") else None
    return {
        "role": role,
        "can_write": role in ("operator", "admin"),
        "is_admin": role == "admin",
    }
