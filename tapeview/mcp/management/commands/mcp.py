"""`tapeview mcp --stdio`: the MCP server over stdin and stdout, for a local agent that starts Tapeview.

The token (`--token`, else TAPEVIEW_TOKEN) is checked on every call, as /mcp checks it on every POST:
a token revoked meanwhile is refused from its next call on.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.contrib.auth.models import AnonymousUser
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections
from django.http import HttpRequest
from mcp.server.stdio import stdio_server

from tapeview.accounts import tokens
from tapeview.accounts.audit import Actor
from tapeview.accounts.auth import Caller
from tapeview.accounts.models import ApiToken
from tapeview.mcp.server import build
from tapeview.mcp.tools import ToolFailed


class Command(BaseCommand):
    help = "Serve the MCP tools over stdin/stdout (--stdio), authorised by an API token."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--stdio", action="store_true", required=True, help="serve over stdin and stdout")
        parser.add_argument("--token", default=None, help="an API token (default: $TAPEVIEW_TOKEN)")

    def handle(self, *args: Any, token: str | None, **options: Any) -> None:
        plaintext = token or os.environ.get("TAPEVIEW_TOKEN", "")
        if not plaintext:
            raise CommandError(
                "give an API token: --token TOKEN or TAPEVIEW_TOKEN (tapeview token create NAME)"
            )
        if _caller(plaintext) is None:
            raise CommandError("that token is not a live API token (unknown, expired or revoked)")
        anyio.run(_serve, plaintext)


def _caller(plaintext: str) -> Caller | None:
    close_old_connections()  # a long-lived process: a connection the database dropped is not reused
    row = tokens.verify(plaintext)
    return Caller(Actor(f"token:{row.name}"), row.scope == ApiToken.WRITE, row) if row else None


async def _serve(plaintext: str) -> None:
    def authorize(ctx: Any) -> HttpRequest:
        caller = _caller(plaintext)
        if caller is None:
            raise ToolFailed(401, {"detail": "the token is no longer live (expired or revoked)"})
        request = HttpRequest()
        request.method, request.user = "POST", AnonymousUser()
        request.auth = caller  # type: ignore[attr-defined]
        return request

    server = build(authorize)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
