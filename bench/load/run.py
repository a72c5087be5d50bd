"""A bounded load run of the production server, beside a live agent: zero 5xx, p50/p95/p99 reported.

    .venv/bin/python bench/load/run.py --users 30 --seconds 60
    .venv/bin/python .ci/postgres_server.py -- .venv/bin/python bench/load/run.py --users 30 --seconds 60
    make load

What it does, all on 127.0.0.1 and all removed afterwards (unless --keep):

1. makes a throwaway TAPEVIEW_HOME, writes the demo data (`tapeview demo`), migrates, creates a
   few operators (`tapeview createuser`) and a read and a write API token (`tapeview token create`);
2. starts `tapeview serve --port <free port>` over the demo sources (waitress, as in production),
   with TAPEVIEW_QUIET_SECONDS=0.5 so that handoffs can land between the agent's turns;
3. starts a simulated Bub agent that appends turns to the demo's largest Bub tape: complete lines
   in Bub's format, one os.write() per line on a fresh O_APPEND descriptor, every ~50 ms, ids
   continuing the tape's last id (a handoff written by the server included), with a pause of about
   a second between turns; and, every --index-every seconds, `tapeview index` in its own process;
4. runs Locust headless for --seconds with --users users (bench/load/locustfile.py): operators
   signed in with a password browse the session index (sorted, filtered, htmx rows), timelines and
   their pages, entries, context previews and search, and hand off through the form; API clients
   list, page and search with a read token and hand off with a write token (201, or 409 busy);
5. stops Locust, the agent, the indexer and the server (always), and prints one table: requests,
   failures, 5xx and p50/p95/p99 in ms per endpoint group and overall.

It exits non-zero if any answer was a 5xx, any request got no answer (connection error), the
server died, a `tapeview index` run failed, the agent's tape afterwards holds a line that does not
parse or a handoff that does not follow the end of a turn, Locust itself failed, or nothing was
requested. Other unexpected answers (a 404, say) are counted as failures in the table and listed,
but do not fail the run. Percentiles are computed from every measured time (nearest rank); the run
folder holds the server's stdout and stderr, Locust's log and CSV files and `answers.json`; it is
kept when the run fails (or with --keep), and then the server's first 500s with their tracebacks
and the tail of its stderr are printed.

With TAPEVIEW_DATABASE_URL (or DATABASE_URL) set to a PostgreSQL server, the run creates a
database of its own on that server, points the server at it and drops it afterwards; otherwise the
index is SQLite in the throwaway home.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"
TAPEVIEW = [sys.executable, "-m", "tapeview"]
OPERATORS = 3
START_TIMEOUT = 240  # seconds for the server to migrate, index and answer
SETUP_TIMEOUT = 120  # seconds for each setup command


def say(message: str) -> None:
    print(f"[load] {message}", flush=True)


def run_tapeview(env: dict, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        [*TAPEVIEW, *args],
        env=env,
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=SETUP_TIMEOUT,
    )
    if done.returncode != 0:
        raise SystemExit(f"tapeview {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the index database -------------------------------------------------------------------------


def database(env: dict, stack: ExitStack) -> str:
    """Point `env` at a database of this run's own; describe it."""
    url = env.get("TAPEVIEW_DATABASE_URL") or env.get("DATABASE_URL") or ""
    if not url:
        return "SQLite"
    parts = urlsplit(url)
    if not parts.scheme.startswith("postgres"):
        env["TAPEVIEW_DATABASE_URL"] = url
        return f"{parts.scheme} (as given)"
    import psycopg  # the `postgres` extra

    name = f"tapeview_load_{secrets.token_hex(4)}"
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    stack.callback(drop)
    env["TAPEVIEW_DATABASE_URL"] = parts._replace(path=f"/{name}").geturl()
    return f"PostgreSQL (database {name})"


# --- the simulated agent ------------------------------------------------------------------------


class Agent(threading.Thread):
    """Appends Bub turns to a live tape the way Bub's FileTapeStore does (formats/bub.md §3)."""

    def __init__(self, path: Path, stop: threading.Event, interval: float = 0.05) -> None:
        super().__init__(name="agent", daemon=True)
        self.path, self.stop, self.interval = path, stop, interval
        self.offset = 0
        self.last_id = 0
        self.system = "(system prompt omitted)"
        self.turns = self.lines = 0
        self.error: str = ""
        self.tail()

    def tail(self) -> None:
        """Read the complete lines appended since last time: the last id, a system prompt to reuse."""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        complete = data[: data.rfind(b"\n") + 1]
        self.offset += len(complete)
        for line in complete.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # Bub skips a line it cannot parse, and so takes its id from the one before
            if isinstance(entry, dict) and isinstance(entry.get("id"), int):
                self.last_id = entry["id"]
                if entry.get("kind") == "system" and isinstance(entry.get("payload"), dict):
                    self.system = str(entry["payload"].get("content") or self.system)

    def append(self, kind: str, payload: dict, meta: dict | None = None) -> None:
        self.tail()
        entry = {
            "id": self.last_id + 1,
            "kind": kind,
            "payload": payload,
            "meta": meta or {},
            "date": datetime.now(UTC).isoformat(),
        }
        data = (json.dumps(entry, ensure_ascii=False) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            written = os.write(fd, data)
        finally:
            os.close(fd)
        if written != len(data):
            raise OSError(f"short write: {written} of {len(data)} bytes")
        self.lines += 1
        self.stop.wait(self.interval)

    def turn(self, n: int) -> None:
        run = {"run_id": f"run-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%fZ')}"}
        usage = {
            "completion_tokens": 40 + n % 17,
            "prompt_tokens": 1600 + n,
            "total_tokens": 1640 + n + n % 17,
            "prompt_tokens_details": {"cached_tokens": 1536},
        }
        model = "openai:gpt-4.1-mini"
        now = f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%S}+00:00"
        prompt = (
            f"sender_id=human|channel=$cli|chat_id=local\n---Date: {now}---\n"
            f"load turn {n}: how many lines does src/parser.py have?"
        )
        call = {
            "id": f"call_wc_{n:04d}",
            "function": {"arguments": '{"command": "wc -l src/parser.py"}', "name": "bash"},
            "type": "function",
        }
        step = {"name": "loop.step.start", "data": {"step": 1, "prompt": prompt}}
        steps: list[tuple[str, dict, dict | None]] = [
            ("event", {"name": "loop.start", "data": {"model": model, "prompt": prompt}}, None),
            ("event", step, None),
            ("system", {"content": self.system}, run),
            ("message", {"role": "user", "content": prompt}, run),
            ("tool_call", {"calls": [call], "content": "Let me count."}, run),
            ("tool_result", {"results": [f"{40 + n} src/parser.py"]}, run),
            ("event", {"name": "run", "data": {"status": "ok", "usage": usage, "model": model}}, run),
            (
                "event",
                {"name": "loop.step", "data": {"step": 1, "elapsed_ms": 600, "status": "continue"}},
                None,
            ),
            ("event", {"name": "loop.step.start", "data": {"step": 2, "prompt": None}}, None),
            ("system", {"content": self.system}, run),
            ("message", {"role": "assistant", "content": f"load turn {n}: it has {40 + n} lines."}, run),
            ("event", {"name": "run", "data": {"status": "ok", "usage": usage, "model": model}}, run),
            ("event", {"name": "loop.step", "data": {"step": 2, "elapsed_ms": 700, "status": "ok"}}, None),
        ]
        for kind, payload, meta in steps:
            self.append(kind, payload, meta)
        self.turns += 1

    def run(self) -> None:
        n = 0
        try:
            while not self.stop.is_set():
                n += 1
                self.turn(n)
                # Idle between turns: long enough past the quiet period for a handoff to land.
                self.stop.wait(0.6 + (n % 5) * 0.2)
        except Exception as exc:  # reported, and fails the run
            self.error = repr(exc)


class TapeCheck:
    """What the live tape looks like after the run: a torn or interleaved write, or a handoff
    written mid-turn (formats/bub.md §4: only after a terminal entry), shows up here."""

    def __init__(self, path: Path) -> None:
        data = path.read_bytes()
        self.lines = data.count(b"\n")
        self.unreadable = 0 if data.endswith(b"\n") else 1
        self.handoffs = self.mid_turn = self.id_repeats = 0
        previous: dict = {}
        for line in data.split(b"\n")[:-1]:
            try:
                entry = json.loads(line)
            except ValueError:
                entry = None
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
                self.unreadable += 1
                previous = {}
                continue
            if entry["kind"] == "anchor" and entry.get("meta", {}).get("origin"):
                self.handoffs += 1
                if not ends_a_turn(previous):
                    self.mid_turn += 1
            # Expected only in the few-microsecond race nothing on disk can close (formats/bub.md §4, rule 4).
            if previous and entry["id"] != previous["id"] + 1:
                self.id_repeats += 1
            previous = entry

    def __str__(self) -> str:
        return (
            f"tape now {self.lines} lines, {self.unreadable} unreadable, {self.handoffs} handoffs by "
            f"Tapeview ({self.mid_turn} mid-turn), {self.id_repeats} ids not following the line before"
        )


def ends_a_turn(entry: dict) -> bool:
    payload = entry.get("payload") or {}
    data = payload.get("data") or {}
    if entry.get("kind") != "event":
        return False
    if payload.get("name") == "loop.step":
        return data.get("status") in ("ok", "error")
    return payload.get("name") in ("handoff", "command")


class Repeat(threading.Thread):
    """`tapeview index` in its own process every few seconds, as a cron job would run it."""

    def __init__(self, every: float, stop: threading.Event, command: Callable[[], int]) -> None:
        super().__init__(name="indexer", daemon=True)
        self.every, self.stop, self.command = every, stop, command
        self.runs, self.failures = 0, 0

    def run(self) -> None:
        while not self.stop.wait(self.every):
            self.runs += 1
            if self.command() != 0:
                self.failures += 1


# --- the server ---------------------------------------------------------------------------------


def wait_until_up(server: subprocess.Popen, base: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited ({server.returncode}) before answering:\n{tail(log, 40)}")
        try:
            with urllib.request.urlopen(f"{base}/login/", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise SystemExit(f"the server did not answer within {START_TIMEOUT} s:\n{tail(log, 40)}")


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def api(base: str, path: str, token: str) -> dict:
    request = urllib.request.Request(f"{base}{path}", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} was not written)"


def server_errors(path: Path, most: int = 3, length: int = 60) -> str:
    """The first few 500s the server logged (Django logs each with its traceback), each cut short."""
    lines = path.read_text(errors="replace").splitlines() if path.exists() else []
    starts = [n for n, line in enumerate(lines) if line.startswith("Internal Server Error")]
    blocks = []
    for start, end in zip(starts[:most], [*starts[1:], len(lines)], strict=False):
        blocks.append("\n".join(lines[start : min(end, start + length)]))
    return "\n\n".join(blocks)


def live_tape(home: Path) -> Path:
    """The demo's largest live Bub tape (not a sidecar, archive or legacy fork copy)."""
    tapes = [
        p
        for p in (home / "demo" / "bub" / "tapes").glob("*.jsonl")
        if p.stem.count("__") == 1 and "%" not in p.stem
    ]
    if not tapes:
        raise SystemExit("the demo data has no Bub tape")
    return max(tapes, key=lambda p: p.stat().st_size)


# --- the report ---------------------------------------------------------------------------------


def percentile(times: list[float], share: float) -> float:
    """Nearest-rank percentile of the measured times."""
    if not times:
        return 0.0
    ordered = sorted(times)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def report(answers: dict[str, dict]) -> tuple[str, dict]:
    """The table, and the totals: requests, failures, 5xx, connection errors."""
    columns = ("requests", "failures", "5xx", "p50 ms", "p95 ms", "p99 ms")
    header = f"{'endpoint group':<40}" + "".join(f" {c:>8}" for c in columns)
    rows = [header, "-" * len(header)]
    everything = {
        "requests": sum(len(a["ms"]) for a in answers.values()),
        "failures": sum(a["failures"] for a in answers.values()),
        "5xx": sum(a["5xx"] for a in answers.values()),
        "connection": sum(a["connection"] for a in answers.values()),
        "ms": [ms for a in answers.values() for ms in a["ms"]],
    }
    browsing = [a for name, a in answers.items() if "/login/" not in name]
    after_sign_in = {
        "failures": sum(a["failures"] for a in browsing),
        "5xx": sum(a["5xx"] for a in browsing),
        "ms": [ms for a in browsing for ms in a["ms"]],
    }
    groups = sorted(answers.items(), key=lambda item: item[0].split(" ", 1)[::-1])
    for name, a in [*groups, ("all", everything), ("all but sign-in", after_sign_in)]:
        if name == "all":
            rows.append("-" * len(header))
        counts = (len(a["ms"]), a["failures"], a["5xx"])
        times = (percentile(a["ms"], 0.50), percentile(a["ms"], 0.95), percentile(a["ms"], 0.99))
        rows.append(f"{name:<40}" + "".join(f" {v:>8.0f}" for v in (*counts, *times)))
    del everything["ms"]
    return "\n".join(rows), everything


# --- the run ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--users", type=int, default=30, help="concurrent Locust users (default 30)")
    parser.add_argument("--seconds", type=int, default=60, help="how long the load lasts (default 60)")
    parser.add_argument(
        "--index-every", type=float, default=10, help="run `tapeview index` this often; 0: never"
    )
    parser.add_argument("--keep", action="store_true", help="keep the run folder (home, logs, statistics)")
    args = parser.parse_args(argv)
    if args.users < 1 or args.seconds < 1:
        parser.error("--users and --seconds must be at least 1")

    run_dir = Path(tempfile.mkdtemp(prefix="tapeview-load-"))
    home, out = run_dir / "home", run_dir / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAPEVIEW_")}
    env.pop("DATABASE_URL", None)
    env.update(
        TAPEVIEW_HOME=str(home),
        TAPEVIEW_QUIET_SECONDS="0.5",
        TAPEVIEW_DEBUG="false",
        PYTHONUNBUFFERED="1",
    )
    for name in ("TAPEVIEW_DATABASE_URL", "DATABASE_URL"):
        if os.environ.get(name):
            env[name] = os.environ[name]
            break
    ok = False
    stop = threading.Event()
    server_log = out / "server.stderr"
    with ExitStack() as stack:
        try:
            db = database(env, stack)
            env.pop("DATABASE_URL", None)
            say(f"run folder {run_dir}; index database: {db}")
            run_tapeview(env, "demo")
            run_tapeview(env, "migrate", "--verbosity", "0")
            accounts = []
            for n in range(1, OPERATORS + 1):
                name, password = f"load-{n}", secrets.token_urlsafe(16)
                run_tapeview(
                    env, "createuser", name, "--role", "operator", "--password-stdin", stdin=password + "\n"
                )
                accounts.append(f"{name}:{password}")
            read_token = (
                run_tapeview(env, "token", "create", "load-read", "--scope", "read").strip().splitlines()[-1]
            )
            write_token = (
                run_tapeview(env, "token", "create", "load-write", "--scope", "write")
                .strip()
                .splitlines()[-1]
            )

            port = free_port()
            base = f"http://127.0.0.1:{port}"
            server = subprocess.Popen(
                [*TAPEVIEW, "serve", "--host", "127.0.0.1", "--port", str(port)],
                env=env,
                cwd=ROOT,
                stdout=stack.enter_context(open(out / "server.stdout", "wb")),
                stderr=stack.enter_context(open(server_log, "wb")),
            )
            stack.callback(stop_process, server)
            wait_until_up(server, base, server_log)
            say(f"server up at {base}")

            tape = live_tape(home)
            size = tape.stat().st_size
            items = api(base, "/api/tapes?limit=500", read_token)["items"]
            live = next((t["id"] for t in items if t["kind"] == "bub" and t["size_bytes"] == size), "")
            agent = Agent(tape, stop)
            first_id = agent.last_id
            agent.start()
            stack.callback(agent.join, 10)
            indexer = None
            if args.index_every > 0:

                def index() -> int:
                    done = subprocess.run(
                        [*TAPEVIEW, "index"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
                    )
                    if done.returncode:
                        (out / f"index-failure-{time.time():.0f}.log").write_text(done.stdout + done.stderr)
                    return done.returncode

                indexer = Repeat(args.index_every, stop, index)
                indexer.start()
                stack.callback(indexer.join, 130)
            say(f"agent appending to {tape.name} (id {live or '?'}) from id {first_id + 1}")

            locust_env = dict(
                env,
                TAPEVIEW_LOAD_ACCOUNTS=",".join(accounts),
                TAPEVIEW_LOAD_READ_TOKEN=read_token,
                TAPEVIEW_LOAD_WRITE_TOKEN=write_token,
                TAPEVIEW_LOAD_LIVE_TAPE=live,
                TAPEVIEW_LOAD_REPORT=str(out / "answers.json"),
            )
            command = [
                sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless",
                "-u", str(args.users), "-r", str(args.users), "-t", f"{args.seconds}s",
                "--stop-timeout", "15", "--host", base, "--csv", str(out / "stats"), "--only-summary",
            ]  # fmt: skip
            say(f"{args.users} users for {args.seconds} s")
            with open(out / "locust.log", "wb") as log:
                locust = subprocess.run(
                    command, env=locust_env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                    timeout=args.seconds + 180,
                )  # fmt: skip
            stop.set()
            agent.join(10)
            if indexer:
                indexer.join(130)
            server_alive = server.poll() is None
            stop_process(server)

            check = TapeCheck(tape)
            if not (out / "answers.json").exists():
                print(tail(out / "locust.log", 40))
                raise SystemExit(f"Locust wrote no report (exit {locust.returncode})")
            answers = json.loads((out / "answers.json").read_text(encoding="utf-8"))
            table, totals = report(answers["answers"])
            print()
            print(table)
            print()
            if answers["failures"]:
                print("failures:")
                print("\n".join(f"{n:>6} x {reason}" for reason, n in list(answers["failures"].items())[:30]))
            indexed = f"{indexer.runs} runs, {indexer.failures} failed" if indexer else "off"
            print(
                f"agent: {agent.turns} turns, {agent.lines} lines; {check}"
                f"{'; agent error ' + agent.error if agent.error else ''}\n"
                f"tapeview index: {indexed}; index database: {db}\n"
                f"requests: {totals['requests']}, failures: {totals['failures']}, "
                f"5xx: {totals['5xx']}, connection errors: {totals['connection']}"
            )
            problems = []
            if totals["5xx"]:
                problems.append(f"{totals['5xx']} answers were 5xx")
            if totals["connection"]:
                problems.append(f"{totals['connection']} requests got no answer")
            if totals["requests"] == 0:
                problems.append("nothing was requested")
            if locust.returncode not in (0, 1):  # 1 only says that some request failed
                problems.append(f"Locust exited {locust.returncode}")
            if not server_alive:
                problems.append("the server died")
            if agent.error:
                problems.append(f"the agent failed: {agent.error}")
            if check.unreadable:
                problems.append(f"{check.unreadable} unreadable lines on the agent's tape")
            if check.mid_turn:
                problems.append(f"{check.mid_turn} handoffs written mid-turn")
            if indexer and indexer.failures:
                problems.append(f"{indexer.failures} `tapeview index` runs failed")
            if problems:
                print(f"FAILED: {', '.join(problems)}")
                if totals["5xx"]:
                    print(f"--- the server's first errors ({server_log}) ---\n{server_errors(server_log)}")
                print(f"--- server stderr (tail of {server_log}) ---\n{tail(server_log, 80)}")
                for failed in sorted(out.glob("index-failure-*.log"))[:3]:
                    print(f"--- {failed.name} ---\n{tail(failed, 30)}")
                return 1
            ok = True
            return 0
        finally:
            stop.set()
            if ok and not args.keep:
                stack.callback(shutil.rmtree, run_dir, ignore_errors=True)
            else:
                say(f"run folder kept: {run_dir}")


if __name__ == "__main__":
    sys.exit(main())
