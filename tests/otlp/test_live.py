"""TAPEVIEW_OTLP_ENDPOINT: the real indexer (`tapeview index --watch`, the one `tapeview serve` runs) sends
each turn it indexes to a real OTLP/HTTP receiver once, across restarts and a collector that was down."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from tests.servers import environment, free_port, own_database
from tests.tapes.test_watcher import api_client, caught_up, eventually, serve

from .receiver import Receiver, receiving

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TURNS = 7  # the sample tape's turns


def bub_turn(first_id: int, text: str) -> bytes:
    """One turn as Bub writes it: the user's message, the answer, the model call's usage, the step's end."""
    date = "2026-11-23T10:00:00.000000+00:00"
    lines = [
        {"kind": "message", "payload": {"role": "user", "content": text}},
        {"kind": "message", "payload": {"role": "assistant", "content": f"answer to {text}"}},
        {
            "kind": "event",
            "payload": {
                "name": "run",
                "data": {
                    "status": "ok",
                    "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107},
                },
            },
        },
        {"kind": "event", "payload": {"name": "loop.step", "data": {"step": 1, "status": "ok"}}},
    ]
    return b"".join(
        orjson.dumps({"id": first_id + i, **line, "meta": {}, "date": date}) + b"\n"
        for i, line in enumerate(lines)
    )


def tape_folder(root: Path) -> Path:
    root.mkdir()
    shutil.copy2(FIXTURES / "bub" / "session_realistic.jsonl", root / "session.jsonl")
    return root


@contextmanager
def watcher_env(tmp_path: Path, url: str) -> Iterator[tuple[dict[str, str], Path, Path]]:
    folder, home = tape_folder(tmp_path / "bub"), tmp_path / "home"
    home.mkdir()
    env = environment(home, f"bub=bub:{folder}", TAPEVIEW_OTLP_ENDPOINT=url, TAPEVIEW_REFRESH_SECONDS="0")
    with own_database(env, "tapeview_otlp") as env:
        yield env, folder / "session.jsonl", home


@contextmanager
def watching(env: dict[str, str], home: Path) -> Iterator[None]:
    """The real `tapeview index --watch`, stopped as Ctrl-C stops it; nothing it logged a traceback."""
    with (home / "watch.log").open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tapeview", "index", "--watch"], env=env, stdout=log, stderr=log
        )
    try:
        yield
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = (home / "watch.log").read_text()
    assert proc.returncode == 0 and "Traceback" not in text, text[-3000:]


def turns(receiver: Receiver) -> list:
    return [s for s in receiver.spans if s.name.startswith("invoke_agent")]


def arrived(count: int):
    return lambda spans: sum(s.name.startswith("invoke_agent") for s in spans) >= count


def test_each_turn_arrives_once_as_it_is_indexed_and_a_restart_sends_nothing_twice(tmp_path: Path) -> None:
    with receiving() as receiver, watcher_env(tmp_path, receiver.url) as (env, tape, home):
        subprocess.run([sys.executable, "-m", "tapeview", "migrate", "-v0"], env=env, check=True, timeout=120)
        with watching(env, home):
            receiver.wait_for(arrived(TURNS))
            with tape.open("ab") as f:
                f.write(bub_turn(98, "and now?"))
            receiver.wait_for(arrived(TURNS + 1))
        with watching(env, home):  # started again: what it sent is remembered
            with tape.open("ab") as f:
                f.write(bub_turn(102, "once more"))
            receiver.wait_for(arrived(TURNS + 2))
        counts = Counter((s.trace_id, s.span_id) for s in receiver.spans)
        assert counts.most_common(1)[0][1] == 1, "a span arrived twice"
        said = sorted(turns(receiver), key=lambda s: s.attributes["tapeview.turn.number"])
        assert [s.attributes["tapeview.turn.number"] for s in said] == list(range(1, TURNS + 3))
        last_chat = [
            s for s in receiver.spans if s.trace_id == said[-1].trace_id and s.name.startswith("chat")
        ]
        assert [s.attributes["gen_ai.usage.input_tokens"] for s in last_chat] == [100]
        assert said[-1].start == 1795428000 * 10**9  # the entries' own date, 2026-11-23T10:00:00Z


def test_a_tape_made_again_is_sent_again_from_its_first_turn(tmp_path: Path) -> None:
    with receiving() as receiver, watcher_env(tmp_path, receiver.url) as (env, tape, home):
        subprocess.run([sys.executable, "-m", "tapeview", "migrate", "-v0"], env=env, check=True, timeout=120)
        with watching(env, home):
            receiver.wait_for(arrived(TURNS))
            made_again = tape.with_name("new.tmp")
            made_again.write_bytes(bub_turn(1, "a new session"))
            made_again.replace(tape)  # as Bub's reset: another file by the same name
            receiver.wait_for(arrived(TURNS + 1))
        first_turns = [s for s in turns(receiver) if s.attributes["tapeview.turn.number"] == 1]
        assert len(first_turns) == 2 and len({s.trace_id for s in first_turns}) == 2


def test_turns_indexed_while_the_collector_is_down_arrive_once_it_is_up(tmp_path: Path) -> None:
    port = free_port()
    with (
        watcher_env(tmp_path, f"http://127.0.0.1:{port}") as (env, tape, home),
        serve(env, home) as (base, _, _),
    ):
        client = api_client(env)
        first = eventually(lambda: caught_up(client, base, "bub"), 30, "the first pass")
        appended = bub_turn(98, "while it is down")
        with tape.open("ab") as f:
            f.write(appended)
        # Indexed at once, the collector down or not.
        more = first["total_bytes"] + len(appended)
        eventually(
            lambda: caught_up(client, base, "bub", more), 10, "the turn indexed while the collector is down"
        )
        # Down past the exporter's own retries: the indexer's backoff has taken over.
        log = home / "serve.log"
        eventually(lambda: "trying again in" in log.read_text(), 60, "the backoff said in the log")
        with receiving(port=port) as receiver:
            receiver.wait_for(arrived(TURNS + 1), 90)
        counts = Counter((s.trace_id, s.span_id) for s in receiver.spans)
        assert counts.most_common(1)[0][1] == 1
