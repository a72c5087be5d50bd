"""A fleet on one machine: a web tier (`serve --no-index`, TAPEVIEW_HOST=web) and the watchers of
host-a (`index --watch`, TAPEVIEW_HOST=host-a), over one database (SQLite file, or PostgreSQL)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import requests

from tests.conftest import FIXTURES
from tests.servers import environment, own_database, tapeview_serve
from tests.tapes.test_watcher import bub_line

TIMEOUT = 30


@dataclass
class Fleet:
    base: str
    web: dict[str, str]  # the web tier's environment
    host_a: dict[str, str]  # host-a's
    bub: Path
    nanobot: Path
    api: requests.Session = field(default_factory=requests.Session)
    watchers: list[subprocess.Popen] = field(default_factory=list)

    def run(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "tapeview", *args],
            env=env or self.web,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
        return done.stdout

    def start_watcher(self, log: Path) -> subprocess.Popen:
        with log.open("w") as out:
            watcher = subprocess.Popen(
                [sys.executable, "-m", "tapeview", "index", "--watch"],
                env=self.host_a,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.watchers.append(watcher)
        return watcher

    def stop_watcher(self, watcher: subprocess.Popen) -> None:
        watcher.send_signal(signal.SIGINT)
        try:
            watcher.wait(30)
        except subprocess.TimeoutExpired:
            watcher.kill()
            watcher.wait()
        self.watchers.remove(watcher)

    def tape_id(self, label: str) -> str:
        tapes = self.api.get(f"{self.base}/api/tapes", timeout=TIMEOUT).json()["items"]
        return next(t["id"] for t in tapes if t["label"] == label and t["host"] == "host-a")

    def store_id(self, kind: str) -> str:
        stores = self.api.get(f"{self.base}/api/memory", params={"kind": kind}, timeout=TIMEOUT).json()
        return stores["items"][0]["id"]


def idle_tape(folder: Path) -> Path:
    """A real Bub session whose agent is between turns: a handoff may be written at once."""
    path = folder / "idle.jsonl"
    shutil.copy(FIXTURES / "bub" / "session_realistic.jsonl", path)
    return path


def busy_tape(folder: Path) -> Path:
    """A tape whose last entry is a user's message: the agent is mid-turn."""
    path = folder / "busy.jsonl"
    path.write_bytes(bub_line(1, "question") + bub_line(2, "another"))
    return path


@contextmanager
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    """Host-a's files indexed by `tapeview index` as host-a, and the web tier serving; no watcher yet."""
    bub = tmp_path / "bub"
    bub.mkdir()
    idle_tape(bub)
    busy_tape(bub)
    nanobot = tmp_path / "nanobot"
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", nanobot)
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "web-sources").mkdir()
    web = environment(home, f"none=bub:{tmp_path / 'web-sources'}", TAPEVIEW_HOST="web")
    with own_database(web, "tapeview_outbox") as web, tapeview_serve(web, home, "--no-index") as served:
        host_a = {
            **web,
            "TAPEVIEW_HOST": "host-a",
            "TAPEVIEW_SOURCES": f"bub=bub:{bub},nanobot=nanobot:{nanobot}",
            "TAPEVIEW_QUIET_SECONDS": "0",
            "TAPEVIEW_WATCH_POLLING": "1",
        }
        running = Fleet(served[0], web, host_a, bub, nanobot)
        token = running.run("token", "create", "w", "--scope", "write").strip().splitlines()[-1]
        running.api.headers["Authorization"] = f"Bearer {token}"
        running.run("index", env=host_a)
        try:
            yield running
        finally:
            for watcher in list(running.watchers):
                running.stop_watcher(watcher)
    assert "Traceback" not in (home / "serve.log").read_text()
