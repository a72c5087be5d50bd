"""Alerts' fixtures: a Bub agent's live tape and an araliya session, indexed; a real local webhook."""

from __future__ import annotations

import json
import queue
import shutil
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tapeview.alerts import evaluate
from tapeview.tapes import discovery, index, signals
from tapeview.tapes.models import Tape
from tapeview.tapes.watcher import Watcher
from tests.tapes.agent import append_line

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SESSION = "01a200e4-e18d-7ffd-b1d0-f7592c930f76"  # an araliya session of the fixture


class Agent:
    """A Bub agent writing its tape: each line as Bub writes it, dated now, its id the last + 1."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.last_id = json.loads(path.read_text().splitlines()[-1])["id"]

    def write(self, kind: str, payload: dict) -> None:
        self.last_id += 1
        line = {
            "id": self.last_id,
            "kind": kind,
            "payload": payload,
            "meta": {},
            "date": datetime.now(UTC).isoformat(),
        }
        append_line(self.path, json.dumps(line, ensure_ascii=False) + "\n")

    def error(self) -> None:
        self.write("error", {"kind": "tool", "message": "the tool failed"})

    def event(self, name: str, data: dict) -> None:
        self.write("event", {"name": name, "data": data})


def indexed(tape: Tape) -> Tape:
    """The tape indexed by the indexer's own function, then the indexer's idle signal, as a watcher's tick."""
    index.refresh(tape)
    signals.indexer_idle.send(sender=Watcher, budget=1.0)
    tape.refresh_from_db()
    return tape


@pytest.fixture(autouse=True)
def _every_pass(monkeypatch) -> None:
    """Each indexer pass of a test evaluates: the watcher's one-second spacing is for its quiet moments."""
    monkeypatch.setattr(evaluate, "EVERY", 0.0)


@pytest.fixture
def live(db, settings, tmp_path: Path) -> tuple[Tape, Agent]:
    root = tmp_path / "bub"
    root.mkdir()
    shutil.copy(FIXTURES / "bub" / "session_realistic.jsonl", root / "session_realistic.jsonl")
    settings.TAPEVIEW_SOURCES = f"bub=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_ALERT_WEBHOOK = ""
    discovery.sync()
    signals.indexer_idle.send(sender=Watcher, budget=1.0)  # the indexer's first pass
    return Tape.objects.get(source="bub", name="session_realistic"), Agent(root / "session_realistic.jsonl")


@pytest.fixture
def araliya(db, settings, tmp_path: Path) -> tuple[Tape, Path]:
    root = tmp_path / "araliya"
    shutil.copytree(FIXTURES / "araliya", root)
    settings.TAPEVIEW_SOURCES = f"ar=araliya:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_ALERT_WEBHOOK = ""
    discovery.sync()
    signals.indexer_idle.send(sender=Watcher, budget=1.0)
    spend = root / "bot-pkey51aee87e" / "memory" / "sessions" / SESSION / "spend.json"
    return Tape.objects.get(source="ar", name=SESSION), spend


class Webhook:
    """A real HTTP server on this machine that keeps the JSON of every POST it is sent."""

    def __init__(self, status: int = 200, port: int = 0) -> None:
        self.status = status
        self.received: queue.Queue[dict] = queue.Queue()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                hook.received.put(
                    {"type": self.headers["Content-Type"], "json": json.loads(self.rfile.read(length))}
                )
                self.send_response(hook.status)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def next(self) -> dict:
        return self.received.get(timeout=10)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()
    yield hook
    hook.close()
