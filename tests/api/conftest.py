"""API clients that send a Bearer token, as a service would."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tapeview import tokens


class Api:
    """The Django test client with `Authorization: Bearer <token>` and JSON bodies."""

    def __init__(self, client: Client, token: str | None) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, path: str, **params: Any):
        return self.client.get(path, params, headers=self.headers)

    def post(self, path: str, body: Any = None, **kwargs: Any):
        return self.client.post(path, body, content_type="application/json", headers=self.headers, **kwargs)

    def put(self, path: str, body: Any = None):
        return self.client.put(path, body, content_type="application/json", headers=self.headers)


@pytest.fixture
def read_token(db) -> str:
    return tokens.create("reader", "read")[1]


@pytest.fixture
def write_token(db) -> str:
    return tokens.create("writer", "write")[1]


@pytest.fixture
def reader(read_token: str) -> Api:
    return Api(Client(), read_token)


@pytest.fixture
def writer(write_token: str) -> Api:
    return Api(Client(), write_token)


@pytest.fixture
def anonymous(db) -> Api:
    return Api(Client(), None)


@pytest.fixture
def idle(settings) -> None:
    """Tapes count as idle at once (the agent's quiet period is for live agents)."""
    settings.TAPEVIEW_QUIET_SECONDS = 0
