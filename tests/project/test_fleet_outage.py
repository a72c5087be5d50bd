"""A fleet's PostgreSQL goes away under a running watcher and comes back (docs/fleet.md).

Real processes: a throwaway PostgreSQL server (.ci/postgres_server.py) that the test stops and
starts again with `pg_ctl`, `tapeview index --watch` as host-a over a folder of its own, and
`tapeview serve --no-index` as host "web", which reads host-a's tape from its copy in the database.
While the server is down the agent appends; once it is back, everything appended is on the web
tier: every entry counted once, the copy byte for byte the file, each marked line found once.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import requests

from tests.conftest import FIXTURES
from tests.project.test_fleet import Host, append, entries_on_disk, eventually
from tests.servers import ROOT, environment, own_database, sign_in_by_link, tapeview_serve

TIMEOUT = 30
DOWN = 8.0  # seconds the server stays down: several of the watcher's ticks and heartbeats
RECOVER = 60.0  # seconds the watcher has to catch up once the server is back (its retry is 10 s)
MARKS = 5  # appended turns while the server is down, each with a word of its own

pytestmark = pytest.mark.skipif(
    not (shutil.which("pg_ctl") or list(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))),
    reason="needs a PostgreSQL server",
)


def _postgres_server():
    spec = importlib.util.spec_from_file_location("postgres_server", ROOT / ".ci" / "postgres_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Server:
    """The throwaway server, stopped and started again in place (its data directory kept)."""

    def __init__(self, module, sock: Path, port: str) -> None:
        self.module, self.sock, self.port = module, sock, port
        self.data = sock.parent / "data"  # where .ci/postgres_server.py puts the cluster
        self.down = False

    def _ctl(self, *args: str) -> None:
        cmd = [self.module.pg_bin("pg_ctl"), "-D", str(self.data), *args]
        subprocess.run(self.module.as_server_user(cmd), check=True, stdout=subprocess.DEVNULL, timeout=60)

    def stop(self) -> None:
        self._ctl("-m", "fast", "-w", "stop")
        self.down = True

    def up_again(self) -> None:
        """Back up if a failed test left it down: the cleanup drops the test's database there."""
        if self.down:
            self.start()

    def start(self) -> None:
        self.down = False
        options = f"-k {self.sock} -p {self.port} -c listen_addresses='' -c fsync=off -c full_page_writes=off"
        self._ctl("-l", str(self.sock.parent / "server.log"), "-o", options, "-w", "start")


@contextmanager
def fleet_of_one(tmp_path: Path) -> Iterator[dict]:
    module = _postgres_server()
    bub = tmp_path / "host-a" / "bub"
    bub.mkdir(parents=True)
    shutil.copy(FIXTURES / "bub" / "session_realistic.jsonl", bub / "work.jsonl")
    append(bub / "work.jsonl", "before the outage")
    homes = {name: tmp_path / f"home-{name}" for name in ("web", "a")}
    for home in homes.values():
        home.mkdir()
    with ExitStack() as stack:
        sock, port = stack.enter_context(module.server())
        url = f"postgres://postgres@/postgres?host={sock}&port={port}"
        web = stack.enter_context(
            own_database(environment(homes["web"], "", TAPEVIEW_HOST="web"), "tapeview_outage", url)
        )
        base, link, _ = stack.enter_context(tapeview_serve(web, homes["web"], "--no-index"))
        host = Host(
            "host-a",
            tmp_path / "host-a",
            environment(
                homes["a"],
                f"a-bub=bub:{bub}",
                TAPEVIEW_HOST="host-a",
                TAPEVIEW_DATABASE_URL=web["TAPEVIEW_DATABASE_URL"],
                TAPEVIEW_QUIET_SECONDS="0",
            ),
        )
        stack.callback(host.stop)
        browser = requests.Session()
        assert sign_in_by_link(browser, link, TIMEOUT).status_code == 200  # signed in
        host.start()
        server = Server(module, sock, port)
        stack.callback(server.up_again)
        yield {
            "base": base,
            "browser": browser,
            "host": host,
            "server": server,
            "tape": bub / "work.jsonl",
            "web_home": homes["web"],
        }


def shown(f: dict) -> dict | None:
    """The tape as the web tier lists it (None while the web tier cannot answer)."""
    try:
        r = f["browser"].get(f"{f['base']}/api/tapes", params={"limit": 10}, timeout=TIMEOUT)
    except requests.RequestException:
        return None
    assert r.status_code != 500, r.text[:300]  # down: 503; back: every connection checked first
    items = r.json()["items"] if r.status_code == 200 else []
    return next((t for t in items if t["host"] == "host-a"), None)


def hits(f: dict, q: str) -> list[dict]:
    r = f["browser"].get(f"{f['base']}/api/search", params={"q": q}, timeout=TIMEOUT)
    return r.json()["items"] if r.status_code == 200 else []


def test_a_watcher_catches_up_after_postgresql_was_unreachable(tmp_path: Path) -> None:
    with fleet_of_one(tmp_path) as f:
        tape = f["tape"]
        before = entries_on_disk(tape)
        eventually(lambda: (shown(f) or {}).get("entries") == before, 60, "the tape indexed")

        f["server"].stop()
        # Meanwhile the web tier says the database is out of reach, and when to try again: no 500.
        for path in ("/api/tapes", "/"):
            r = f["browser"].get(f"{f['base']}{path}", timeout=TIMEOUT)
            assert r.status_code == 503 and r.headers.get("Retry-After"), (path, r.status_code, r.text[:300])
            assert "cannot be reached" in r.text, path
        for n in range(MARKS):
            append(tape, f"appended while the database was down outagemark{n}z")
            time.sleep(DOWN / MARKS)
        total = entries_on_disk(tape)
        assert total > before
        f["server"].start()
        back = time.monotonic()

        found = eventually(
            lambda: (t := shown(f)) and t["entries"] == total and t,
            RECOVER,
            "the watcher caught up after the outage",
        )
        caught_up = time.monotonic() - back
        # The web tier's connections, kept across requests, died with the server: each is checked
        # before use (conn_health_checks), so no thread of it answers a 500 now.
        answers = [f["browser"].get(f"{f['base']}/api/tapes", timeout=TIMEOUT).status_code for _ in range(24)]
        assert answers == [200] * 24, answers
        assert found["unreadable"] == 0, found
        export = f["browser"].get(
            f"{f['base']}/api/tapes/{found['id']}/export", params={"format": "jsonl"}, timeout=TIMEOUT
        )
        assert export.status_code == 200 and export.content == tape.read_bytes()  # the copy: byte for byte
        for n in range(MARKS):
            eventually(lambda n=n: hits(f, f"outagemark{n}z"), 30, f"mark {n} searchable")
            assert len(hits(f, f"outagemark{n}z")) == 1, n

        # Each loop of the watcher said the outage in one line when it began and one when it ended,
        # and the web tier one line for each 503: no traceback anywhere.
        # The outbox's pause may still be running out (it doubles while the database stays away).
        eventually(lambda: "the outbox: the database is back after" in f["host"].log(), 60, "the outbox back")
        watcher_log, web_log = f["host"].log(), (f["web_home"] / "serve.log").read_text()
        for loop in ("the outbox", "indexing"):
            assert watcher_log.count(f"{loop}: the database cannot be reached") == 1, watcher_log[-3000:]
            assert watcher_log.count(f"{loop}: the database is back after") == 1, watcher_log[-3000:]
        assert "Traceback" not in watcher_log, watcher_log[-3000:]
        assert "Traceback" not in web_log and "(the database cannot be reached: " in web_log, web_log[-3000:]

        # And it watches again: the next append is on the web tier as quickly as before the outage.
        append(tape, "after the outage")
        eventually(lambda: (shown(f) or {}).get("entries") == entries_on_disk(tape), 5, "a live append")
        print(
            f"\noutage: {DOWN:.0f} s down, {total - before} entries appended, caught up in {caught_up:.1f} s"
        )
