"""PostgreSQL's GIN index in slices, kept by a real `tapeview serve` while an agent appends to its
tape and readers search: the server's watcher makes the slices and splits the newest as the agent
writes, and every search answers 200 with the entries a user expects, before, during and after
each change (search/slices.py)."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
import requests

from tests.servers import environment, own_database, run_url, tapeview_serve
from tests.tapes.test_watcher import api_client

pytestmark = pytest.mark.skipif(not run_url().startswith("postgres"), reason="PostgreSQL's GIN index")

BASE = 30_000  # entries on the tape before the server starts; every tenth says "tenth"
SLICE_DOCS = 3_000  # TAPEVIEW_SEARCH_SLICE_DOCS: ten slices of the tape, the newest split at 6,000
AGENT_SECONDS = 12  # the agent appends 50 entries every 0.1 s: about two splits
DEADLINE = 90  # seconds the agent and the readers go on at most, until a split is seen
READERS = 4
TIMEOUT = 30


def line(n: int, text: str, when: datetime) -> str:
    entry = {"id": n, "kind": "message", "payload": {"role": "user", "content": text}, "meta": {}}
    return json.dumps({**entry, "date": when.isoformat()}) + "\n"


def base_text(n: int) -> str:
    return f"common base{n}" + (" tenth" if n % 10 == 0 else "")


SLICES = r"LIKE 'search\_doc\_slice\_%'"


def slice_names(url: str) -> list[str]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(f"SELECT relname FROM pg_class WHERE relname {SLICES}").fetchall()
    return sorted(name for (name,) in rows)


def positions(api: requests.Session, base: str, most: int = 10**9, **params: object) -> list[int]:
    """The hits of a search, page after page (500 a page), in the order they come: all, or `most`."""
    found: list[int] = []
    cursor = None
    while True:
        page = {**params, "limit": 500, **({"cursor": cursor} if cursor else {})}
        answer = api.get(f"{base}/api/search", params=page, timeout=TIMEOUT)
        assert answer.status_code == 200, answer.text[:500]
        body = answer.json()
        found += [hit["pos"] for hit in body["items"]]
        cursor = body["next_cursor"]
        if not cursor or len(found) >= most:
            return found


def caught_up(api: requests.Session, base: str, tape: Path, seconds: float) -> None:
    """Until the tape is indexed to its end and all of it searchable."""
    deadline = time.monotonic() + seconds
    while True:
        (source,) = api.get(f"{base}/api/sources", timeout=TIMEOUT).json()["items"]
        if source["indexed_bytes"] == tape.stat().st_size and source["search_behind"] == 0:
            return
        assert time.monotonic() < deadline, source
        time.sleep(0.2)


def test_serve_slices_the_index_while_an_agent_writes_and_readers_search(tmp_path: Path) -> None:
    folder, home = tmp_path / "bub", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    tape = folder / "agent.jsonl"
    start = datetime(2026, 1, 1, tzinfo=UTC)
    tape.write_text("".join(line(n, base_text(n), start + timedelta(seconds=n)) for n in range(1, BASE + 1)))
    settings = {"TAPEVIEW_SEARCH_SLICE_DOCS": str(SLICE_DOCS), "TAPEVIEW_SEARCH_SLICE_SECONDS": "0.2"}
    env = environment(home, f"bub=bub:{folder}", **settings)
    with own_database(env, "slices") as env, tapeview_serve(env, home) as (base, _, _):
        url = env["TAPEVIEW_DATABASE_URL"]
        api = api_client(env)
        caught_up(api, base, tape, seconds=120)  # the cold index and its search pass
        with psycopg.connect(url, autocommit=True) as conn:
            # What autovacuum does within a minute: the statistics tell a common word from a rare one.
            conn.execute("ANALYZE search_doc")

        stop = threading.Event()
        written = [BASE]  # the last entry the agent wrote
        seen: list[list[str]] = []  # the slices, each time they changed
        answers: Counter[int] = Counter()
        wrong: list[str] = []
        tenths = list(range(BASE, 0, -10))  # every "tenth", newest first

        def agent() -> None:
            n = BASE
            with tape.open("a") as out:
                while not stop.is_set():
                    out.write(
                        "".join(line(n + k, f"common agent{n + k}", datetime.now(UTC)) for k in range(1, 51))
                    )
                    out.flush()
                    n += 50
                    written[0] = n
                    time.sleep(0.1)

        def watch() -> None:
            while not stop.is_set():
                names = slice_names(url)
                if not seen or names != seen[-1]:
                    seen.append(names)
                time.sleep(0.1)

        read_deep = [0]  # the deep reads done

        def guarded(work: Callable[..., None], *args: object) -> Callable[[], None]:
            def run() -> None:
                try:
                    work(*args)
                except Exception as failed:  # noqa: BLE001  (the test fails on it, below)
                    wrong.append(f"{work.__name__}{args}: {failed!r}")

            return run

        def split() -> bool:
            return len({name for names in seen for name in names if name.endswith("_top")}) >= 2

        def read(k: int) -> None:
            client = requests.Session()  # one per thread: a Session is not thread-safe
            client.headers.update(api.headers)
            pick = random.Random(k)
            while not stop.is_set():
                n = pick.randrange(1, BASE + 1)
                answer = client.get(f"{base}/api/search", params={"q": f"base{n}"}, timeout=TIMEOUT)
                answers[answer.status_code] += 1
                if answer.status_code == 200 and [h["pos"] for h in answer.json()["items"]] != [n]:
                    wrong.append(f"base{n}: {answer.text[:300]}")
                answer = client.get(
                    f"{base}/api/search",
                    params={"q": "common", "order": "time", "limit": 20},
                    timeout=TIMEOUT,
                )
                answers[answer.status_code] += 1
                if answer.status_code == 200:
                    newest = [h["pos"] for h in answer.json()["items"]]
                    if newest != list(range(newest[0], newest[0] - 20, -1)):  # consecutive: none left out
                        wrong.append(f"common, by time: {newest}")
                if k == 0:  # deep pages, past the newest slices (the agent's entries are of today)
                    deep = positions(client, base, most=8_000, q="common", order="time", until="2026-01-01")
                    if deep != list(range(BASE, BASE - 8_000, -1)):
                        wrong.append(f"common, by time, until 2026-01-01: {deep[:5]}... not every entry once")
                    if positions(client, base, q="tenth", order="time") != tenths:
                        wrong.append("the tenths, page after page, are not every tenth entry")
                    read_deep[0] += 1

        threads = [threading.Thread(target=guarded(f)) for f in (agent, watch)]
        threads += [threading.Thread(target=guarded(read, k)) for k in range(READERS)]
        for thread in threads:
            thread.start()
        started = time.monotonic()
        # At least AGENT_SECONDS, and until the newest slice was split and the deep pages read once.
        while time.monotonic() < started + AGENT_SECONDS or not (split() and read_deep[0]):
            if wrong or time.monotonic() > started + DEADLINE:
                break
            time.sleep(0.2)
        stop.set()
        for thread in threads:
            thread.join(TIMEOUT)
            assert not thread.is_alive()

        assert not wrong, wrong[:5]
        assert set(answers) == {200} and sum(answers.values()) > 50, answers
        assert split(), seen  # the newest slice was split while the agent wrote
        assert read_deep[0] >= 1
        assert max(len(names) for names in seen) >= BASE // SLICE_DOCS, seen  # the older docs sliced

        # Everything the agent wrote is searchable once the pass caught up, the newest first.
        caught_up(api, base, tape, seconds=60)
        newest = api.get(
            f"{base}/api/search", params={"q": "common", "order": "time", "limit": 20}, timeout=TIMEOUT
        )
        assert [h["pos"] for h in newest.json()["items"]] == list(range(written[0], written[0] - 20, -1))
        assert positions(api, base, q="tenth", order="time") == tenths
    log = (home / "serve.log").read_text()
    assert "Traceback" not in log and "slices were left" not in log, log[-3000:]
