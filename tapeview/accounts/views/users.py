"""People who can sign in: an admin lists them, adds them, changes roles, sends sign-in links."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from .. import signin
from ..audit import Actor, record
from ..roles import ROLES, role_of, role_required, set_role

ROLE_CHOICES = [(r, r) for r in ROLES]


class UserForm(forms.Form):
    username = forms.RegexField(regex=r"^[\w.@+-]{1,150}$", max_length=150)
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial="viewer")

    def clean_username(self) -> str:
        name = self.cleaned_data["username"]
        if User.objects.filter(username=name).exists():
            raise forms.ValidationError("someone has this name already")
        return name


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=ROLE_CHOICES)


@role_required("admin")
def user_list(request: HttpRequest) -> HttpResponse:
    """Everyone who can sign in, with their roles. Template `accounts/user_list.html`."""
    form = UserForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = User.objects.create_user(form.cleaned_data["username"])
        user.set_unusable_password()
        user.save()
        set_role(user, form.cleaned_data["role"])
        role = form.cleaned_data["role"]
        record(
            Actor.of(request.user),
            "user.add",
            subject=f"user:{user.username}",
            target=user.username,
            after=role,
        )
        return _with_link(request, user, f"Added {user.username}.")
    people = [(u, role_of(u)) for u in User.objects.order_by("username").prefetch_related("groups")]
    return render(request, "accounts/user_list.html", {"form": form, "people": people, "roles": ROLES})


@require_POST
@role_required("admin")
def user_role(request: HttpRequest, user_id: int) -> HttpResponse:
    user = get_object_or_404(User, pk=user_id)
    form = RoleForm(request.POST)
    if form.is_valid():
        if user == request.user and form.cleaned_data["role"] != "admin":
            messages.error(request, "You cannot take the admin role from yourself.")
        else:
            before, role = role_of(user), form.cleaned_data["role"]
            user.is_superuser = user.is_superuser and role == "admin"
            user.save(update_fields=["is_superuser"])
            set_role(user, role)
            subject = f"user:{user.username}"
            record(
                Actor.of(request.user),
                "user.role",
                subject=subject,
                target=user.username,
                before=before,
                after=role,
            )
            messages.info(request, f"{user.username} is now {form.cleaned_data['role']}.")
    return redirect("accounts:user_list")


@require_POST
@role_required("admin")
def user_active(request: HttpRequest, user_id: int) -> HttpResponse:
    user = get_object_or_404(User, pk=user_id)
    if user == request.user:
        messages.error(request, "You cannot lock yourself out.")
    else:
        user.is_active = not user.is_active
        user.save(update_fields=["is_active"])
        record(
            Actor.of(request.user),
            "user.unlock" if user.is_active else "user.lock",
            subject=f"user:{user.username}",
            target=user.username,
            before="locked out" if user.is_active else "can sign in",
            after="can sign in" if user.is_active else "locked out",
        )
        messages.info(request, f"{user.username} can {'now' if user.is_active else 'no longer'} sign in.")
    return redirect("accounts:user_list")


@require_POST
@role_required("admin")
def user_link(request: HttpRequest, user_id: int) -> HttpResponse:
    return _with_link(request, get_object_or_404(User, pk=user_id, is_active=True), "")


def _with_link(request: HttpRequest, user: User, note: str) -> HttpResponse:
    link = request.build_absolute_uri(f"/signin/{signin.issue(user)}/")
    messages.info(
        request, f"{note} One-time sign-in link for {user.username} (valid 24 hours): {link}".strip()
    )
    return redirect("accounts:user_list")
