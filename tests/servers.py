"""The real `tapeview serve` in a process of its own, over its own database: what the tests of a
live server (live agents beside it, the background indexer) start."""

from __future__ import annotations

import importlib.util
import os
import re
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def environment(home: Path, sources: str, **settings: str) -> dict[str, str]:
    """The commands' environment: this test's TAPEVIEW_HOME and sources, no inherited database."""
    env = {k: v for k, v in os.environ.items() if k not in ("TAPEVIEW_DATABASE_URL", "DATABASE_URL")}
    env.update(TAPEVIEW_HOME=str(home), TAPEVIEW_SECRET_KEY="test", TAPEVIEW_SOURCES=sources, **settings)
    return env


def run_url() -> str:
    """The database the test run uses, from its environment ("" for the default SQLite)."""
    return os.environ.get("TAPEVIEW_DATABASE_URL") or os.environ.get("DATABASE_URL") or ""


@contextmanager
def own_database(env: dict[str, str], prefix: str, url: str = "") -> Iterator[dict[str, str]]:
    """`env` as it is (SQLite in TAPEVIEW_HOME), or, when TAPEVIEW_DATABASE_URL (or `url`) names a
    PostgreSQL server (`.ci/postgres_server.py`), with a database of this test's own on it, dropped after."""
    url = url or run_url()
    if not url.startswith("postgres"):
        yield env
        return
    import psycopg

    parts = urlsplit(url)
    name = f"{prefix}_{secrets.token_hex(4)}"
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield {**env, "TAPEVIEW_DATABASE_URL": parts._replace(path=f"/{name}").geturl()}
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def postgres_database(env: dict[str, str], prefix: str) -> Iterator[dict[str, str]]:
    """`env` with a PostgreSQL database of this test's own: on the run's server when it has one
    (`make test-postgres`), else on a throwaway server started for this test (`make test-sqlite`)."""
    if run_url().startswith("postgres"):
        with own_database(env, prefix) as env:
            yield env
        return
    spec = importlib.util.spec_from_file_location("postgres_server", ROOT / ".ci" / "postgres_server.py")
    postgres_server = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(postgres_server)
    with (
        postgres_server.server() as (sock, port),
        own_database(env, prefix, f"postgres://postgres@/postgres?host={sock}&port={port}") as env,
    ):
        yield env


@contextmanager
def tapeview_serve(
    env: dict[str, str], home: Path, *args: str, inside: Sequence[str] = (), first: bool = True
) -> Iterator[tuple[str, str, float]]:
    """`tapeview serve`: its base URL, the one-time sign-in link it prints (the first server over a
    database prints one for the first admin; `first=False`: none expected), and when it said
    "Serving on". `inside`: a command that runs it (e.g. in a mount namespace that hides folders)."""
    port = free_port()
    log = home / "serve.log"
    serve = [sys.executable, "-m", "tapeview", "serve", "--port", str(port), "--host", "127.0.0.1"]
    with log.open("w") as out:
        server = subprocess.Popen(
            [*inside, *serve, *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "Serving on" not in log.read_text():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.05)
        serving = time.monotonic()
        # "Serving on" is printed just before the socket is bound: the first connection may wait.
        while not listening(port):
            assert server.poll() is None and time.monotonic() < serving + 10, log.read_text()[-3000:]
            time.sleep(0.05)
        link = re.search(r"http://127\.0\.0\.1:\d+/signin/[\w-]+/", log.read_text())
        assert link or not first, log.read_text()[-3000:]
        yield f"http://127.0.0.1:{port}", link.group(0) if link else "", serving
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def sign_in_by_link(browser, link: str, timeout: float = 30):
    """Open a one-time sign-in link in a `requests.Session` and press its button, as a person does:
    the answer (for the first admin, the set-a-password page)."""
    page = browser.get(link, timeout=timeout)
    assert page.status_code == 200, page.text[-2000:]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    return browser.post(link, data={"csrfmiddlewaretoken": token}, headers={"Referer": link}, timeout=timeout)
