"""Guessing is slow: failed sign-ins by password, one-time link or API token lock the address out."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import Api

LIMIT = 3


@pytest.fixture(autouse=True)
def small_limit(settings) -> None:
    settings.AXES_FAILURE_LIMIT = LIMIT


def test_wrong_passwords_lock_the_address_out_even_for_the_right_one(client, user_factory) -> None:
    user_factory("vera")
    for _ in range(LIMIT - 1):
        page = client.post("/login/", {"username": "vera", "password": "guess"})
        assert page.status_code == 200 and "enter a correct username and password" in page.content.decode()
    assert client.post("/login/", {"username": "vera", "password": "guess"}).status_code == 429
    locked = client.post("/login/", {"username": "vera", "password": "a long test password"})
    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_right_password_resets_the_count(client, user_factory) -> None:
    user_factory("vera")
    for _ in range(LIMIT - 1):
        client.post("/login/", {"username": "vera", "password": "guess"})
    assert client.post("/login/", {"username": "vera", "password": "a long test password"}).status_code == 302
    client.logout()
    client.post("/login/", {"username": "vera", "password": "guess"})
    assert client.post("/login/", {"username": "vera", "password": "a long test password"}).status_code == 302


def test_bad_tokens_lock_the_address_out_of_the_api(db, write_token) -> None:
    for _ in range(LIMIT):
        assert Api(Client(), "tv_not-a-token").get("/api/tapes").status_code == 401
    refused = Api(Client(), write_token).get("/api/tapes")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert refused.json()["detail"].startswith("too many failed sign-ins")


def test_a_good_token_is_not_counted(db, read_token) -> None:
    for _ in range(LIMIT + 2):
        assert Api(Client(), read_token).get("/api/sources").status_code == 200


def test_guessed_sign_in_links_lock_the_address_out(client, user_factory) -> None:
    from tapeview.accounts import signin

    token = signin.issue(user_factory("vera"))
    for n in range(LIMIT):
        assert client.get(f"/signin/guess-{n}/").status_code == 403
    locked = client.get(f"/signin/{token}/")
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.content.decode()
