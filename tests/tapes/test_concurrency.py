"""Many readers of a growing tape at once: one indexer per tape, pages that never fail or wait."""

from __future__ import annotations

import json
import os
import random
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
import requests
from django.db import OperationalError, connection
from django.utils import timezone

from tapeview.accounts.models import AuditEvent
from tapeview.sources import bub, parse_sources
from tapeview.tapes import discovery, handoff, index
from tapeview.tapes import rows as index_rows
from tapeview.tapes.models import Tape
from tests.servers import sign_in_by_link

from .agent import agent_lines, append_line, ends_a_turn

READERS = 8  # two of them sync the whole source, as a page of the session list does
APPENDS = 300


@pytest.mark.django_db(transaction=True)
def test_concurrent_refreshes_of_a_growing_tape_index_every_line_exactly_once(
    shared_db, tmp_path: Path
) -> None:
    (tmp_path / "tapes").mkdir()
    path = tmp_path / "tapes" / "a__b.jsonl"
    lines = agent_lines(APPENDS + 5)
    path.write_text("".join(lines[:5]))
    specs = parse_sources([f"t=bub:{tmp_path / 'tapes'}"])
    discovery.sync(specs)
    tape_id = Tape.objects.get(name="a__b").pk
    done = threading.Event()
    errors: list[BaseException] = []

    def agent() -> None:
        try:
            for line in lines[5:]:
                append_line(path, line)
                time.sleep(0.001)
        finally:
            done.set()

    def reader(n: int) -> None:
        try:
            while not done.is_set():
                if n < 2:
                    discovery.sync(specs)
                else:
                    index.refresh(Tape.objects.get(pk=tape_id))
                time.sleep(0.001)  # let the agent have the GIL now and then
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever a reader hit
            errors.append(exc)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=agent),
        *(threading.Thread(target=reader, args=(n,)) for n in range(READERS)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:3]
    index.refresh(Tape.objects.get(pk=tape_id))

    tape = Tape.objects.get(pk=tape_id)
    rows = [(r.pos, r.offset, r.entry_id) for r in index_rows.of(tape).all()]
    assert [pos for pos, _, _ in rows] == list(range(1, len(lines) + 1))
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line.encode()))
    assert [offset for _, offset, _ in rows] == offsets
    assert [entry_id for _, _, entry_id in rows] == [json.loads(line)["id"] for line in lines]
    assert (tape.entries, tape.unreadable, tape.next_pos) == (len(lines), 0, len(lines) + 1)
    assert tape.indexed_offset == tape.size == os.path.getsize(path)


@pytest.mark.django_db
def test_a_tape_being_indexed_elsewhere_is_read_as_indexed_without_waiting(tmp_path: Path) -> None:
    path = tmp_path / "a__b.jsonl"
    lines = agent_lines(10)
    path.write_text("".join(lines[:5]))
    discovery.sync(parse_sources([f"t=bub:{tmp_path}"]))
    tape = Tape.objects.get(name="a__b")
    for line in lines[5:]:
        append_line(path, line)
    # Another process holds the tape (its lease runs 30 s from now).
    Tape.objects.filter(pk=tape.pk).update(
        indexer="other", indexing_until=timezone.now() + timedelta(seconds=30)
    )
    started = time.monotonic()
    assert index.refresh(tape) is False
    assert time.monotonic() - started < 1
    assert (tape.entries, index_rows.of(tape).count()) == (5, 5)


@pytest.mark.django_db
def test_the_lease_of_a_crashed_indexer_runs_out_and_the_next_request_takes_over(tmp_path: Path) -> None:
    path = tmp_path / "a__b.jsonl"
    lines = agent_lines(10)
    path.write_text("".join(lines[:5]))
    discovery.sync(parse_sources([f"t=bub:{tmp_path}"]))
    tape = Tape.objects.get(name="a__b")
    for line in lines[5:]:
        append_line(path, line)
    Tape.objects.filter(pk=tape.pk).update(
        indexer="crashed", indexing_until=timezone.now() - timedelta(seconds=1)
    )
    assert index.refresh(tape) is True
    tape.refresh_from_db()
    assert (tape.entries, tape.indexer, tape.indexing_until) == (10, "", None)
    assert [r.pos for r in index_rows.of(tape).all()] == list(range(1, 11))


@pytest.mark.django_db
def test_an_indexer_whose_lease_was_taken_over_writes_nothing_more(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "a__b.jsonl"
    lines = agent_lines(10)
    path.write_text("".join(lines[:5]))
    discovery.sync(parse_sources([f"t=bub:{tmp_path}"]))
    tape = Tape.objects.get(name="a__b")
    for line in lines[5:]:
        append_line(path, line)

    def stalled(read):
        def reading(*args, **kwargs):
            # This indexer stalls past its lease; another takes the tape over meanwhile.
            Tape.objects.filter(pk=tape.pk).update(
                indexer="newer", indexing_until=timezone.now() + timedelta(seconds=30)
            )
            return read(*args, **kwargs)

        return reading

    monkeypatch.setattr(bub, "lines", stalled(bub.lines))
    monkeypatch.setattr(bub, "blocks", stalled(bub.blocks))  # where the C lane is built
    assert index.refresh(tape) is False
    assert index_rows.of(tape).count() == 5
    assert Tape.objects.get(pk=tape.pk).indexer == "newer"  # its lease is left alone


def test_a_written_handoff_is_audited_and_answered_201_even_if_indexing_it_fails(
    writer, served, idle, monkeypatch
) -> None:
    tape = Tape.objects.get(label="telegram:-1001234567890")

    def broken(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(handoff, "index", SimpleNamespace(refresh=broken))
    r = writer.post(f"/api/tapes/{tape.key}/handoff", {"name": "phase/review"})
    assert r.status_code == 201
    assert json.loads(Path(tape.path).read_text().splitlines()[-2])["payload"]["name"] == "phase/review"
    audit = AuditEvent.objects.get()
    assert (audit.action, audit.detail["name"]) == ("handoff", "phase/review")


# The real server: waitress threads, the file database, a live agent, readers and writers at once.

SERVE_SECONDS = 10
PAGE_READERS = 16
HANDOFF_WRITERS = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def tapeview_serve(home: Path, tapes: Path) -> Iterator[tuple[str, str]]:
    """`tapeview serve` over one Bub folder: its base URL and the one-time sign-in link it prints."""
    port = free_port()
    log = home / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tapeview",
                "serve",
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
                f"bub:{tapes}",
            ],
            env=server_env(home),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 30
        while "Serving on" not in log.read_text():
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        link = re.search(r"http://127\.0\.0\.1:\d+/signin/[\w-]+/", log.read_text())
        assert link, log.read_text()
        yield f"http://127.0.0.1:{port}", link.group(0)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def server_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TAPEVIEW_DATABASE_URL", "DATABASE_URL")}
    # The server's own SQLite file in `home`: a database URL here would be a developer's real one.
    return {
        **env,
        "TAPEVIEW_HOME": str(home),
        "TAPEVIEW_SECRET_KEY": "test",
        "TAPEVIEW_QUIET_SECONDS": "0.2",
        "TAPEVIEW_SOURCES": "",
    }


def tapeview(home: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tapeview", *args],
        env=server_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_server_under_concurrent_reads_and_handoffs_while_the_agent_writes(tmp_path: Path) -> None:
    home, tapes = tmp_path / "home", tmp_path / "tapes"
    home.mkdir()
    tapes.mkdir()
    path = tapes / "a__b.jsonl"
    lines = agent_lines(2000)
    first = next(n for n, line in enumerate(lines) if ends_a_turn(line)) + 1
    path.write_text("".join(lines[:first]))
    turns = split_turns(lines[first:])
    written = lines[:first]

    with tapeview_serve(home, tapes) as (base, link):
        token = tapeview(home, "token", "create", "bot", "--scope", "write").strip().splitlines()[-1]
        bearer = {"Authorization": f"Bearer {token}"}
        browser = requests.Session()
        assert sign_in_by_link(browser, link, 10).status_code == 200  # signed in, at the set-a-password page
        key = requests.get(f"{base}/api/tapes", headers=bearer, timeout=10).json()["items"][0]["id"]

        stop = threading.Event()
        answers: list[tuple[str, int]] = []
        handoffs: list[tuple[str, int, str | bool]] = []
        failures: list[BaseException] = []

        def agent() -> None:
            rng = random.Random(1)
            for turn in turns:
                if stop.is_set():
                    return
                for line in turn:
                    append_line(path, line)
                    written.append(line)
                    time.sleep(rng.uniform(0, 0.005))
                time.sleep(rng.uniform(0.05, 0.5))  # between turns: now and then idle long enough to hand off

        def reader(n: int) -> None:
            signed_in = requests.Session()  # one per thread: a Session is not thread-safe
            signed_in.cookies.update(browser.cookies)
            api = requests.Session()
            api.headers.update(bearer)
            gets = [
                (signed_in, f"/tapes/{key}/?end=1"),
                (api, f"/api/tapes/{key}/entries?after={n * 10}"),
                (api, f"/api/tapes/{key}"),
            ]
            while not stop.is_set():
                for session, url in gets:
                    # No redirects: a page that sent us to sign in again would not be a 200.
                    r = session.get(base + url, timeout=30, allow_redirects=False)
                    answers.append((url, r.status_code))

        def writer(n: int) -> None:
            for i in range(1000):
                if stop.is_set():
                    return
                name = f"phase/x-{n}-{i}"
                r = requests.post(
                    f"{base}/api/tapes/{key}/handoff", json={"name": name}, headers=bearer, timeout=30
                )
                busy = (
                    r.status_code == 409
                    and r.json()["detail"].startswith("busy")
                    and r.headers["Retry-After"]
                )
                handoffs.append((name, r.status_code, busy))
                time.sleep(0.1)

        def guarded(work: Callable[..., None], *args: object) -> Callable[[], None]:
            def run() -> None:
                try:
                    work(*args)
                except BaseException as exc:  # noqa: BLE001 - a dropped connection is a failure too
                    failures.append(exc)

            return run

        threads = [
            threading.Thread(target=guarded(agent)),
            *(threading.Thread(target=guarded(reader, n)) for n in range(PAGE_READERS)),
            *(threading.Thread(target=guarded(writer, n)) for n in range(HANDOFF_WRITERS)),
        ]
        for t in threads:
            t.start()
        time.sleep(SERVE_SECONDS)
        stop.set()
        for t in threads:
            t.join(60)
        final = requests.get(f"{base}/api/tapes/{key}", headers=bearer, timeout=30).json()

    assert not failures, failures[:3]
    assert answers and not [a for a in answers if a[1] >= 500], [a for a in answers if a[1] >= 500][:5]
    assert {status for _, status in answers} == {200}
    assert {status for _, status, _ in handoffs} <= {201, 409}
    assert all(busy for _, status, busy in handoffs if status == 409)  # busy, with Retry-After
    accepted = sorted(name for name, status, _ in handoffs if status == 201)
    assert accepted, "no handoff found the tape idle: the test did not test writes"

    # On disk: every line whole, the agent's own lines all there in order, one anchor per 201.
    raw = path.read_text().splitlines(keepends=True)
    on_disk = [json.loads(line) for line in raw]
    ours = [e for e in on_disk if e["meta"].get("origin") == "tapeview"]
    agents = [line for line, e in zip(raw, on_disk, strict=True) if e["meta"].get("origin") != "tapeview"]
    assert agents == written
    assert sorted(e["payload"]["name"] for e in ours if e["kind"] == "anchor") == accepted
    assert len(ours) == 2 * len(accepted)

    # The audit log: exactly one handoff row per 201, naming it.
    with closing(sqlite3.connect(f"file:{home / 'tapeview.sqlite3'}?mode=ro", uri=True)) as db:
        audited = [
            json.loads(d)["name"]
            for (d,) in db.execute("SELECT detail FROM accounts_auditevent WHERE action = 'handoff'")
        ]
    assert sorted(audited) == accepted

    # The index caught up: every line once.
    assert (final["entries"], final["unreadable"]) == (len(on_disk), 0)


def split_turns(lines: list[str]) -> list[list[str]]:
    turns, turn = [], []
    for line in lines:
        turn.append(line)
        if ends_a_turn(line):
            turns.append(turn)
            turn = []
    return turns
