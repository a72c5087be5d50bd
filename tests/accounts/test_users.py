"""Admins manage people; viewers and operators cannot."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from tapeview.accounts.roles import role_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, user_factory):
    client.force_login(user_factory("ada", "admin"))
    return client


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_it_returns_403_to_non_admins(client, user_factory, role) -> None:
    client.force_login(user_factory("someone", role))
    assert client.get("/users/").status_code == 403
    assert client.post("/users/", {"username": "x", "role": "admin"}).status_code == 403
    assert "Users</a>" not in client.get("/sources/").content.decode()
    assert not User.objects.filter(username="x").exists()


def test_admin_adds_a_person_and_gets_a_sign_in_link(admin_client) -> None:
    page = admin_client.post(
        "/users/", {"username": "olga", "role": "operator"}, follow=True
    ).content.decode()
    link = re.search(r"One-time sign-in link for olga \(valid 24 hours\): (http://\S+/signin/[\w-]+/)", page)
    assert link
    olga = User.objects.get(username="olga")
    assert role_of(olga) == "operator" and not olga.has_usable_password()
    admin_client.logout()
    assert admin_client.post(link.group(1).replace("http://testserver", "")).status_code == 302


def test_admin_changes_a_role_and_locks_someone_out(admin_client, user_factory) -> None:
    vera = user_factory("vera", "viewer")
    admin_client.post(f"/users/{vera.pk}/role", {"role": "operator"})
    assert role_of(User.objects.get(pk=vera.pk)) == "operator"
    admin_client.post(f"/users/{vera.pk}/active")
    assert not User.objects.get(pk=vera.pk).is_active


def test_admin_cannot_demote_or_lock_out_themselves(admin_client) -> None:
    ada = User.objects.get(username="ada")
    page = admin_client.post(f"/users/{ada.pk}/role", {"role": "viewer"}, follow=True).content.decode()
    assert "cannot take the admin role from yourself" in page and role_of(ada) == "admin"
    admin_client.post(f"/users/{ada.pk}/active")
    assert User.objects.get(pk=ada.pk).is_active


def test_a_taken_name_is_refused(admin_client, user_factory) -> None:
    user_factory("vera")
    page = admin_client.post("/users/", {"username": "vera", "role": "viewer"}).content.decode()
    assert "someone has this name already" in page
