"""What the reading commands share: errors in one line (exit 2), another Tapeview's REST API
(`--url`, `--token`), and a reader that closed the pipe (`| head`)."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from urllib.parse import quote, urlencode, urlsplit

from django.core.management.base import CommandError, CommandParser

TIMEOUT = 60  # seconds: a search over a big index may take a few
USAGE = 2  # the exit status of a bad query, tape or server, as grep's of an error


def refuse(message: str) -> CommandError:
    """The one line a command prints, with exit status 2, for anything the user can fix."""
    return CommandError(" ".join(message.split()), returncode=USAGE)


def add_options(parser: CommandParser) -> None:
    parser.add_argument("--url", help="a remote Tapeview (its REST API), instead of the local index")
    parser.add_argument("--token", help="the remote's API token (default: TAPEVIEW_TOKEN)")


class Remote:
    """A Tapeview's REST API at `url`, called with a Bearer token."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise refuse(f"--url {url!r}: expected http(s)://host[:port]")
        if not token:
            raise refuse("a remote Tapeview needs a token: --token or TAPEVIEW_TOKEN")
        self.base = url.rstrip("/")
        self.token = token

    def get_text(self, path: str, **params: object) -> str:
        """The body of GET /api/<path>; raises refuse() with what went wrong."""
        query = urlencode({k: v for k, v in params.items() if v is not None})
        url = f"{self.base}/api/{path}" + (f"?{query}" if query else "")
        ask = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(ask, timeout=TIMEOUT) as answer:
                return answer.read().decode()
        except urllib.error.HTTPError as exc:
            raise refuse(f"{self.base}: {exc.code}: {_detail(exc)}") from None
        except OSError as exc:  # refused, unresolved, timed out (URLError is one)
            reason = getattr(exc, "reason", exc)
            raise refuse(f"cannot reach {self.base}: {reason}") from None

    def get(self, path: str, **params: object) -> dict:
        text = self.get_text(path, **params)
        try:
            return json.loads(text)
        except ValueError:
            raise refuse(f"{self.base}: the answer is not JSON (is it a Tapeview?)") from None

    @staticmethod
    def part(value: str) -> str:
        """A value as one segment of an API path."""
        return quote(value, safe="")


def _detail(exc: urllib.error.HTTPError) -> str:
    """The API's {"detail": ...}, a validation error as "where: what"."""
    try:
        detail = json.loads(exc.read().decode(errors="replace"))["detail"]
    except (ValueError, KeyError, TypeError):
        return exc.reason or "error"
    if isinstance(detail, list) and detail and isinstance(detail[0], dict):
        first = detail[0]
        where = ".".join(str(p) for p in first.get("loc", [])[1:]) or "request"
        return f"{where}: {first.get('msg', '')}"
    return str(detail)


def remote_from(options: dict) -> Remote | None:
    """The remote the options name, or None for the local index."""
    if not options.get("url"):
        return None
    return Remote(options["url"], options.get("token") or os.environ.get("TAPEVIEW_TOKEN", ""))


def pipe_closed() -> None:
    """The reader of stdout has gone (`| head`): end quietly, as grep and cat do, with nothing left
    to flush onto the closed pipe at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
