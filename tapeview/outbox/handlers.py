"""What the outbox can carry out: handlers registered by the apps that own the writes, by name.

A handler takes the request's params and its actor and returns the Result the synchronous endpoint
would have given; what it raises is answered as the API answers it (`answer_errors_with`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.http import HttpResponse
from ninja.responses import NinjaJSONEncoder

from tapeview.accounts.audit import Actor
from tapeview.errors import MESSAGES


@dataclass(frozen=True)
class Result:
    """An answer as the synchronous endpoint gives it: status, JSON body, the headers that matter."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    reason: str = ""  # a raised error's own message (pages word it their own way)

    @classmethod
    def of(cls, status: int, body: Any, **headers: str) -> Result:
        """`body` as the API would render it (schemas, datetimes): plain JSON to keep in a row."""
        return cls(status, json.loads(json.dumps(body, cls=NinjaJSONEncoder)), headers)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


Handler = Callable[[dict, Actor], Result]
_handlers: dict[str, Handler] = {}
_answer_error: list[Callable[[Exception], HttpResponse]] = []
KEPT_HEADERS = ("Retry-After",)
log = logging.getLogger(__name__)


def handler(action: str) -> Callable[[Handler], Handler]:
    """Register the function that carries out `action` (at import of the module that defines it)."""

    def register(fn: Handler) -> Handler:
        _handlers[action] = fn
        return fn

    return register


def known(action: str) -> bool:
    return action in _handlers


def answer_errors_with(answer: Callable[[Exception], HttpResponse]) -> None:
    """How the API answers an exception (tapeview/api.py gives its own): one mapping for both paths."""
    _answer_error[:] = [answer]


def run(action: str, params: dict, actor: Actor) -> Result:
    """Carry out one request and say what the synchronous endpoint would have answered."""
    try:
        return _handlers[action](params, actor)
    except Exception as exc:
        return answer(exc)


def answer(exc: Exception) -> Result:
    """An exception as the API answers it; one it does not map is the 500 every page gives."""
    try:
        response = _answer_error[0](exc)
    except Exception:
        log.error("an outbox request failed", exc_info=exc)
        return Result(500, {"detail": MESSAGES[500]}, reason=str(exc) or type(exc).__name__)
    headers = {name: response[name] for name in KEPT_HEADERS if response.has_header(name)}
    return Result(response.status_code, json.loads(response.content), headers, str(exc))
