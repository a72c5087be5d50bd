"""Guessing is slow: wrong passwords lock that name out from that address; bad one-time links and
API tokens get 429 past the limit, while a valid link or token from the same address still works."""

from __future__ import annotations

import pytest
from django.test import Client

from tapeview.accounts import signin
from tests.conftest import Api

LIMIT = 3
PASSWORD = "a long test password"


@pytest.fixture(autouse=True)
def small_limit(settings) -> None:
    settings.AXES_FAILURE_LIMIT = LIMIT


def guess(client: Client, name: str, times: int) -> list[int]:
    return [client.post("/login/", {"username": name, "password": "guess"}).status_code for _ in range(times)]


def test_wrong_passwords_lock_that_name_out_even_for_the_right_one(client, user_factory) -> None:
    user_factory("vera")
    page = client.post("/login/", {"username": "vera", "password": "guess"})
    assert page.status_code == 200 and "enter a correct username and password" in page.content.decode()
    assert guess(client, "vera", LIMIT - 1) == [200] * (LIMIT - 2) + [429]
    locked = client.post("/login/", {"username": "vera", "password": PASSWORD})
    assert locked.status_code == 429 and locked["Retry-After"] == "900"
    text = locked.content.decode()
    assert "Signing in as <strong>vera</strong> from this address has failed too often" in text
    assert "Wait 15 minutes and try again" in text and "PT15M" not in text
    assert "_auth_user_id" not in client.session


def test_someone_else_at_the_same_address_still_signs_in(client, user_factory) -> None:
    user_factory("vera")
    user_factory("olga")
    assert guess(client, "vera", LIMIT)[-1] == 429
    assert client.post("/login/", {"username": "olga", "password": PASSWORD}).status_code == 302


def test_the_same_name_from_another_address_still_signs_in(user_factory) -> None:
    user_factory("vera")
    assert guess(Client(REMOTE_ADDR="203.0.113.7"), "vera", LIMIT)[-1] == 429
    other = Client(REMOTE_ADDR="203.0.113.8")
    assert other.post("/login/", {"username": "vera", "password": PASSWORD}).status_code == 302


def test_the_right_password_resets_the_count(client, user_factory) -> None:
    user_factory("vera")
    guess(client, "vera", LIMIT - 1)
    assert client.post("/login/", {"username": "vera", "password": PASSWORD}).status_code == 302
    client.logout()
    guess(client, "vera", 1)
    assert client.post("/login/", {"username": "vera", "password": PASSWORD}).status_code == 302


def test_bad_tokens_get_429_past_the_limit_and_a_valid_token_still_works(db, write_token) -> None:
    bad = Api(Client(), "tv_not-a-token")
    assert [bad.get("/api/tapes").status_code for _ in range(LIMIT)] == [401] * LIMIT
    refused = bad.get("/api/tapes")
    assert refused.status_code == 429 and refused["Retry-After"] == "900"
    assert refused.json()["detail"].startswith("too many failed sign-ins with bad tokens from this address")
    assert Api(Client(), write_token).get("/api/tapes").status_code == 200
    assert bad.get("/api/tapes").status_code == 429  # still refused: the valid token reset nothing


def test_bad_tokens_do_not_lock_out_passwords(client, user_factory) -> None:
    user_factory("vera")
    for _ in range(LIMIT + 1):
        Api(Client(), "tv_not-a-token").get("/api/tapes")
    assert client.post("/login/", {"username": "vera", "password": PASSWORD}).status_code == 302


def test_a_good_token_is_not_counted(db, read_token) -> None:
    for _ in range(LIMIT + 2):
        assert Api(Client(), read_token).get("/api/sources").status_code == 200


def test_guessed_sign_in_links_get_429_and_a_valid_link_still_works(client, user_factory) -> None:
    token = signin.issue(user_factory("vera"))
    assert [client.get(f"/signin/guess-{n}/").status_code for n in range(LIMIT)] == [403] * LIMIT
    locked = client.get("/signin/guess-again/")
    assert locked.status_code == 429 and locked["Retry-After"] == "900"
    assert "Sign-in links from this address have failed too often. Wait 15 minutes" in locked.content.decode()
    assert client.get(f"/signin/{token}/").status_code == 200
    assert client.post(f"/signin/{token}/").status_code == 302
