"""The parts of bench/fleet.py that need a real watcher process: the outbox round trip and what an
idle `tapeview index --watch` costs (RSS, CPU, database transactions and statements per minute)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import orjson

from bench.harness import ROOT, timed
from bench.make_tape import write_tape

SAMPLE = ROOT / "tests/fixtures/bub/session_realistic.jsonl"
TICK = os.sysconf("SC_CLK_TCK")


def wait_for(check: Callable[[], object], seconds: float, what: str) -> object:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        if time.monotonic() > deadline:
            sys.exit(f"bench/fleet.py: {what} did not happen within {seconds:.0f} s")
        time.sleep(0.2)
    return found


@contextmanager
def watcher(host: str, sources: str, home: Path) -> Iterator[subprocess.Popen]:
    """`tapeview index --watch` as `host` over `sources`, on this run's database; stopped after."""
    from tests.servers import environment

    home.mkdir(parents=True, exist_ok=True)
    env = environment(home, sources, TAPEVIEW_HOST=host, TAPEVIEW_QUIET_SECONDS="0")
    env["TAPEVIEW_DATABASE_URL"] = os.environ["TAPEVIEW_DATABASE_URL"]
    with (home / "watch.log").open("a") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tapeview", "index", "--watch"], env=env, stdout=log, stderr=log
        )
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def step_end(path: Path) -> None:
    """An agent's turn ends (formats/bub.md §4): the tape is idle again, so a handoff may follow."""
    last = orjson.loads(path.read_bytes().rstrip().rsplit(b"\n", 1)[-1])
    end = {"id": last["id"] + 1, "kind": "event", "payload": {"name": "loop.step", "data": {"status": "ok"}}}
    with path.open("ab") as f:
        f.write(orjson.dumps({**end, "meta": {}, "date": "2026-11-20T10:00:01+00:00"}) + b"\n")


def outbox_round_trip(work: Path, runs: int) -> dict:
    """p50 of a handoff (the API, 201) on an idle tape of host "outbox-host": from a web tier of
    another host (through the outbox and that host's watcher) against the same host (direct)."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    from tapeview.accounts.roles import set_role
    from tapeview.tapes.models import Tape

    folder = work / "outbox-tapes"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    tape_path = folder / "idle.jsonl"
    shutil.copy(SAMPLE, tape_path)
    step_end(tape_path)
    user, _ = User.objects.get_or_create(username="bench-operator")
    set_role(user, "operator")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    settings.TAPEVIEW_QUIET_SECONDS = 0  # as the watcher's: the agent's turn has ended, the tape is idle
    times: dict[str, list[float]] = {"outbox": [], "direct": []}
    statuses: Counter = Counter()
    with watcher("outbox-host", f"outbox=bub:{folder}", work / "home-outbox") as proc:
        tape = wait_for(lambda: Tape.objects.filter(host="outbox-host", entries__gt=0).first(), 60, "indexed")
        url = f"/api/tapes/{tape.key}/handoff"
        for n in range(runs):
            for mode, host in (("outbox", "web"), ("direct", "outbox-host")):
                settings.TAPEVIEW_HOST = host
                time.sleep(0.3)  # the watcher has indexed the last turn: the tape is idle, not mid-index
                seconds, r = timed(
                    lambda n=n, mode=mode: client.post(
                        url, {"name": f"phase/{mode}-{n}"}, content_type="application/json"
                    )
                )
                statuses[(mode, r.status_code)] += 1
                if r.status_code == 201:
                    times[mode].append(seconds * 1000)
                step_end(tape_path)
        alive = proc.poll() is None
    settings.TAPEVIEW_HOST = "bench-host"
    return {
        "p50": {m: statistics.median(t) if t else float("nan") for m, t in times.items()},
        "statuses": {f"{m} {s}": c for (m, s), c in sorted(statuses.items())},
        "watcher_alive": alive,
    }


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime, every thread of the process


def _rss_mb(pid: int) -> float:
    found = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(found.group(1)) / 1024


def _transactions() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
        )
        return cursor.fetchone()[0]


def server_log() -> Path:
    """The throwaway server's log (.ci/postgres_server.py keeps it beside the socket directory)."""
    sock = parse_qs(urlsplit(os.environ["TAPEVIEW_DATABASE_URL"]).query)["host"][0]
    return Path(sock).parent / "server.log"


def statements(text: str) -> Counter:
    """The logged statements by verb and first table."""
    found: Counter = Counter()
    for sql in re.findall(r"LOG:  statement: (.*)", text):
        table = re.search(r'(?:FROM|INTO|UPDATE|TABLE)\s+"?(\w+)"?', sql, re.IGNORECASE)
        found[f"{sql.split()[0].upper()} {table.group(1) if table else ''}".strip()] += 1
    return found


def idle_watcher(work: Path, tapes: int, seconds: float) -> dict:
    """An idle watcher over `tapes` small tapes, once it has indexed, copied and searched them all."""
    from django.db import connection

    from tapeview.search.catchup import lag_by_source
    from tapeview.tapes.models import FileCopy, Indexer, Tape

    folder = work / f"idle-{tapes}"
    if not folder.is_dir() or len(list(folder.glob("*.jsonl"))) != tapes:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        from bench.corpus import NOW
        from tapeview.demodata.bub_tape import tape_name

        for n in range(tapes):
            name = tape_name(f"/work/ws{n % 50}", f"idle-{n}")
            write_tape(folder / f"{name}.jsonl", 20, f"idle/{n}", NOW - timedelta(hours=n))
    with connection.cursor() as cursor:  # every statement of the watcher's sessions in the server log
        cursor.execute(f"ALTER DATABASE \"{connection.settings_dict['NAME']}\" SET log_statement = 'all'")
    with watcher("idle-host", f"idle=bub:{folder}", work / "home-idle") as proc:
        started = time.monotonic()
        wait_for(
            lambda: (
                Tape.objects.filter(host="idle-host", indexed_at__isnull=False).count() == tapes
                and FileCopy.objects.filter(host="idle-host").count() == tapes
                and Indexer.objects.filter(host="idle-host", pass_at__isnull=False).exists()
                and not lag_by_source().get("idle")
            ),
            600,
            f"the watcher indexing {tapes} tapes",
        )
        ready = time.monotonic() - started
        time.sleep(5)  # the last follow-up work of the first pass
        log = server_log()
        cpu, xacts, offset = _cpu_seconds(proc.pid), _transactions(), log.stat().st_size
        time.sleep(seconds)
        cpu, xacts = _cpu_seconds(proc.pid) - cpu, _transactions() - xacts - 2  # our own two reads
        with log.open("rb") as f:
            f.seek(offset)
            logged = statements(f.read().decode(errors="replace"))
        rss = _rss_mb(proc.pid)
    per_minute = 60 / seconds
    return {
        "ready_s": ready,
        "rss_mb": rss,
        "cpu_s_per_min": cpu * per_minute,
        "xacts_per_min": xacts * per_minute,
        "statements_per_min": sum(logged.values()) * per_minute,
        "top": [(k, v * per_minute) for k, v in logged.most_common(6)],
    }
