"""One refused sign-in is one line in the server's log, and the lockout still counts every one."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from tests.conftest import Api

LIMIT = 3

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def small_limit(settings) -> None:
    settings.AXES_FAILURE_LIMIT = LIMIT


def lines(caplog, ask) -> tuple[object, list[str]]:
    """Every line one request writes to the log (what serve.log shows: WARNING and up)."""
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        answer = ask()
    return answer, [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_refused_api_token_is_one_line_naming_it(caplog) -> None:
    answer, logged = lines(caplog, lambda: Api(Client(), "tv_not-a-token").get("/api/tapes"))
    assert answer.status_code == 401
    assert logged == ["401 GET /api/tapes by anonymous (refused token tv_not-a-t...): Unauthorized"]


def test_a_refused_sign_in_link_is_one_line(client, caplog) -> None:
    answer, logged = lines(caplog, lambda: client.get("/signin/guess-1/"))
    assert answer.status_code == 403
    assert len(logged) == 1 and logged[0].startswith("403 GET /signin/guess-1/ by anonymous: ")


def test_a_wrong_password_is_one_plain_line_without_the_name_typed(client, user_factory, caplog) -> None:
    user_factory("vera")
    answer, logged = lines(caplog, lambda: client.post("/login/", {"username": "vera", "password": "guess"}))
    assert answer.status_code == 200
    assert logged == ["sign-in refused: a password from 127.0.0.1 on /login/"]


def test_bad_tokens_are_still_locked_out_and_the_lockout_says_so(caplog, write_token) -> None:
    for _ in range(LIMIT - 1):
        assert len(lines(caplog, lambda: Api(Client(), "tv_guess").get("/api/tapes"))[1]) == 1
    answer, logged = lines(caplog, lambda: Api(Client(), "tv_guess").get("/api/tapes"))
    assert answer.status_code == 401
    assert logged == [
        "sign-ins locked out after repeated failures, the last: an API token from 127.0.0.1 on /api/tapes",
        "401 GET /api/tapes by anonymous (refused token tv_guess...): Unauthorized",
    ]
    answer, logged = lines(caplog, lambda: Api(Client(), "tv_guess").get("/api/tapes"))
    assert answer.status_code == 429 and len(logged) == 1 and logged[0].startswith("429 GET /api/tapes")
    answer, logged = lines(caplog, lambda: Api(Client(), write_token).get("/api/tapes"))
    assert answer.status_code == 200 and logged == []


def test_a_password_that_trips_the_lockout_is_its_refusal_and_its_429(client, user_factory, caplog) -> None:
    user_factory("vera")
    for _ in range(LIMIT - 1):
        client.post("/login/", {"username": "vera", "password": "guess"})
    answer, logged = lines(caplog, lambda: client.post("/login/", {"username": "vera", "password": "guess"}))
    assert answer.status_code == 429
    assert logged == [
        "sign-in refused: a password from 127.0.0.1 on /login/",
        "429 POST /login/ by anonymous: Too Many Requests",
    ]
