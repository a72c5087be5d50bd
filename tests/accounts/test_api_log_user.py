"""The server's log names who made a refused API request: the token (never its secret) or the person."""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from tapeview.accounts import tokens

pytestmark = pytest.mark.django_db


def logged(caplog, client: Client, method: str, path: str, token: str | None = None, **kwargs) -> list[str]:
    """The django.request lines (what serve.log shows) of one request."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with caplog.at_level(logging.WARNING, logger="django.request"):
        getattr(client, method)(path, headers=headers, **kwargs)
    return [r.getMessage() for r in caplog.records if r.name == "django.request"]


def test_a_refused_token_request_is_logged_with_the_tokens_name_id_prefix_and_maker(
    user_factory, caplog
) -> None:
    row, secret = tokens.create("readbot", "read", created_by=user_factory("adam", "admin"))
    body = {"base_version": "x", "content": "y"}
    path = "/api/memory/nope/long-term"
    [line] = logged(caplog, Client(), "put", path, secret, data=body, content_type="application/json")
    by = f"by token:readbot (id {row.pk}, {row.prefix}..., made by adam)"
    assert line == f"403 PUT /api/memory/nope/long-term {by}: Forbidden"
    assert secret not in line


def test_a_token_made_on_the_command_line_is_logged_by_name_id_and_prefix(caplog) -> None:
    row, secret = tokens.create("clibot", "read")
    [line] = logged(caplog, Client(), "get", "/api/tapes/nope", secret)
    assert line.startswith(f"404 GET /api/tapes/nope by token:clibot (id {row.pk}, {row.prefix}...): ")
    assert secret not in line


def test_a_revoked_token_is_logged_by_the_prefix_its_admins_see(caplog) -> None:
    row, secret = tokens.create("oldbot", "read")
    tokens.revoke(row)
    [line] = logged(caplog, Client(), "get", "/api/tapes", secret)
    assert line.startswith(f"401 GET /api/tapes by anonymous (refused token {row.prefix}...): ")
    assert secret not in line


def test_a_bearer_that_is_no_token_is_logged_without_echoing_it(caplog) -> None:
    [line] = logged(caplog, Client(), "get", "/api/tapes", "hunter2-secret")
    assert line.startswith("401 GET /api/tapes by anonymous (refused token (not a Tapeview token)): ")
    assert "hunter2" not in line


def test_a_signed_in_persons_api_request_is_logged_by_their_name(viewer_client, caplog) -> None:
    [line] = logged(caplog, viewer_client, "get", "/api/tapes/nope")
    assert line.startswith("404 GET /api/tapes/nope by vera: ")
