"""PostgreSQL's fresh docs under a real `tapeview serve` (search/fresh.py): its first search pass makes
a 30,000-entry tape searchable as fresh docs, then moves them into the GIN index while an agent
appends (its bursts made fresh too) and readers search; every search answers 200 with the same hits,
fresh, moving or moved."""

from __future__ import annotations

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

from tests.search.test_slices_served import base_text, caught_up, line
from tests.servers import environment, own_database, run_url, tapeview_serve
from tests.tapes.test_watcher import api_client

pytestmark = pytest.mark.skipif(not run_url().startswith("postgres"), reason="PostgreSQL's fresh docs")

BASE = 30_000  # entries on the tape before the server starts; every tenth says "tenth"
TENTHS = list(range(BASE, 0, -10))  # the agent never says "tenth": these are all of them, newest first
FRESH_DOCS = 200  # TAPEVIEW_SEARCH_FRESH_DOCS: what the pass reads of the agent in a second goes fresh
BURST = 300  # entries the agent writes at once every second, with a word of the burst's own
HOLD = 6  # seconds at least the tape's blocks are kept fresh while readers search
DEADLINE = 45  # seconds the agent and the readers go on at most
READERS = 3
TIMEOUT = 30
POS = (1 << 32) - 1  # a doc's id is its tape << 32 | its position


def fresh_base(conn: psycopg.Connection) -> int:
    """The tape's first 30,000 entries still fresh (the agent's come and go)."""
    return conn.execute("SELECT count(*) FROM search_fresh WHERE id & %s <= %s", [POS, BASE]).fetchone()[0]


def hold_blocks(url: str, release: threading.Event, held: list[tuple[int, int]]) -> None:
    """The moving of the tape's blocks held back until `release`, as a slow move would (the real tape's
    took 8.2 s; these 30,000 short entries move in under one): each block is locked as soon as the
    pass makes it, and refine moves the blocks it can lock (FOR UPDATE SKIP LOCKED)."""
    with psycopg.connect(url) as conn:
        first = None
        while not release.is_set() and (first is None or time.monotonic() < first + 0.5):
            try:
                rows = conn.execute("SELECT low, high FROM search_chunk FOR UPDATE SKIP LOCKED").fetchall()
            except psycopg.errors.UndefinedTable:  # the server has not made its tables yet
                rows = []
            if not rows:
                conn.rollback()  # no lock held on an empty table: the migrations go on
            else:
                held[:] = [(low & POS, high & POS) for low, high in rows]
                first = first or time.monotonic()
                if sum(high - low + 1 for low, high in held) >= BASE:
                    break
            time.sleep(0.005)
        release.wait(DEADLINE + 60)
        conn.rollback()


def page_all(api: requests.Session, base: str, **params: object) -> list[dict]:
    """Every hit of a search, page after page (500 a page), each with the page's `total`."""
    hits: list[dict] = []
    cursor = None
    while True:
        page = {**params, "limit": 500, **({"cursor": cursor} if cursor else {})}
        answer = api.get(f"{base}/api/search", params=page, timeout=TIMEOUT)
        assert answer.status_code == 200, answer.text[:500]
        body = answer.json()
        hits += [{**hit, "total": body["total"]} for hit in body["items"]]
        cursor = body["next_cursor"]
        if not cursor:
            return hits


def changes(first: list[dict], then: list[dict]) -> list[tuple]:
    """What differs between two answers of the same hits: (position, field, first value, then)."""
    pairs = zip(first, then, strict=True)
    return [(a["pos"], k, a[k], b[k]) for a, b in pairs for k in a if a[k] != b[k]][:3]


def phase(before: int, after: int) -> str:
    """When a read was made, from the tape's fresh docs before and after: "fresh" all along, "moved"
    (none of them left when it began), or "moving"."""
    return "fresh" if after else "moved" if not before else "moving"


def test_serve_answers_alike_while_the_docs_are_fresh_moving_and_moved(tmp_path: Path) -> None:
    folder, home = tmp_path / "bub", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    tape = folder / "agent.jsonl"
    start = datetime(2026, 1, 1, tzinfo=UTC)
    tape.write_text("".join(line(n, base_text(n), start + timedelta(seconds=n)) for n in range(1, BASE + 1)))
    env = environment(home, f"bub=bub:{folder}", TAPEVIEW_SEARCH_FRESH_DOCS=str(FRESH_DOCS))
    release, stop = threading.Event(), threading.Event()
    held: list[tuple[int, int]] = []  # the blocks held fresh: (first, last) position
    with own_database(env, "fresh") as env:
        url = env["TAPEVIEW_DATABASE_URL"]
        holder = threading.Thread(target=hold_blocks, args=(url, release, held), daemon=True)
        holder.start()
        try:
            with tapeview_serve(env, home) as (base, _, _):
                api = api_client(env)
                caught_up(api, base, tape, seconds=60)  # the first pass: all of it fresh
                serve_and_read(api, base, url, tape, held, release, stop)
        finally:
            release.set()
            stop.set()
            holder.join(TIMEOUT)
    log = (home / "serve.log").read_text()
    assert "Traceback" not in log, log[-3000:]


def serve_and_read(
    api: requests.Session,
    base: str,
    url: str,
    tape: Path,
    held: list[tuple[int, int]],
    release: threading.Event,
    stop: threading.Event,
) -> None:
    assert sum(high - low + 1 for low, high in held) >= 8_192, held  # two blocks of the tape at least
    written = [BASE]  # the last entry the agent wrote
    bursts: dict[int, tuple[int, int]] = {}  # each burst written: its first and last entry
    answers: Counter[int] = Counter()
    wrong: list[str] = []
    pagings: dict[str, list[list[dict]]] = {"time": [], "relevance": []}
    seen: Counter[str] = Counter()  # reads by when they were made (see `phase`)
    first_answer: dict[str, list[dict]] = {}  # the hits of a word, as first answered in full
    found_at: dict[str, float] = {}  # when a word was first found in full

    def agent() -> None:
        n, rounds = BASE, 0
        with tape.open("a") as out:
            while not stop.is_set():
                rounds += 1
                texts = [f"common agent{n + i}" for i in range(1, 21)]
                if rounds % 10 == 0:
                    texts += [f"common agent{n + 20 + i} burst{rounds}" for i in range(1, BURST + 1)]
                out.write("".join(line(n + i, t, datetime.now(UTC)) for i, t in enumerate(texts, 1)))
                out.flush()
                if rounds % 10 == 0:
                    bursts[rounds] = (n + 21, n + len(texts))
                n += len(texts)
                written[0] = n
                time.sleep(0.1)

    def search(client: requests.Session, word: str) -> tuple[float, int, list[dict]]:
        """When a word was searched for, how many entries match, and its hits (500 at most, by time)."""
        asked = time.monotonic()
        answer = client.get(
            f"{base}/api/search", params={"q": word, "order": "time", "limit": 500}, timeout=TIMEOUT
        )
        answers[answer.status_code] += 1
        body = answer.json() if answer.status_code == 200 else {"items": [], "total": -1}
        return asked, body["total"], body["items"]

    def check(word: str, answer: tuple[float, int, list[dict]], whole: list[int], due: bool = False) -> None:
        """A word's hits: `whole` once all its entries are searchable, a tape's (`due`: all of them are
        already) or the agent's (searchable oldest first); once found whole, always, hit for hit."""
        asked, total, hits = answer
        got = [hit["pos"] for hit in hits]
        if got == whole and total == len(whole):
            first = first_answer.setdefault(word, hits)
            found_at.setdefault(word, time.monotonic())
            if hits != first:
                wrong.append(f"{word}: {changes(first, hits)} (position, field, first answer, this one)")
            return
        partial = got == whole[len(whole) - len(got) :] and len(got) <= total <= len(whole)
        if due or not partial or (word in found_at and asked > found_at[word]):
            wrong.append(f"{word}: {len(got)} hits {got[:3]}... of {total}, not {len(whole)}: {whole[:3]}...")

    def read(k: int) -> None:
        client = requests.Session()  # one per thread: a Session is not thread-safe
        client.headers.update(api.headers)
        pick = random.Random(k)
        with psycopg.connect(url, autocommit=True) as conn:
            while not stop.is_set():
                n = pick.randrange(1, BASE + 1)
                before = fresh_base(conn)
                answer = search(client, f"base{n}")
                seen[phase(before, fresh_base(conn))] += 1
                check(f"base{n}", answer, [n], due=True)
                n = pick.randrange(BASE + 1, written[0] + 1)
                agents = "SELECT count(*) FROM search_fresh WHERE id & %s > %s"
                seen["agent's fresh"] += conn.execute(agents, [POS, BASE]).fetchone()[0] > 0
                check(f"agent{n}", search(client, f"agent{n}"), [n])
                if bursts:
                    b, (low, high) = pick.choice(list(bursts.items()))
                    check(f"burst{b}", search(client, f"burst{b}"), list(range(high, low - 1, -1)))

    def page(order: str) -> None:
        client = requests.Session()
        client.headers.update(api.headers)
        with psycopg.connect(url, autocommit=True) as conn:
            while not stop.is_set():
                before = fresh_base(conn)
                hits = page_all(client, base, q="tenth", order=order)
                seen[f"{order}, {phase(before, fresh_base(conn))}"] += 1
                got = [hit["pos"] for hit in hits]
                if got != TENTHS or {hit["total"] for hit in hits} != {len(TENTHS)}:
                    twice = [p for p, times in Counter(got).items() if times > 1]
                    totals = sorted({hit["total"] for hit in hits})
                    wrong.append(f"tenth by {order}: {len(got)} hits, twice: {twice[:5]}, totals {totals}")
                elif pagings[order] and hits != pagings[order][0]:
                    wrong.append(f"tenth by {order}: {changes(pagings[order][0], hits)}")
                pagings[order].append(hits)

    def guarded(work: Callable[..., None], *args: object) -> threading.Thread:
        def run() -> None:
            try:
                work(*args)
            except Exception as failed:  # noqa: BLE001  (the test fails on it, below)
                wrong.append(f"{work.__name__}{args}: {failed!r}")

        return threading.Thread(target=run)

    threads = [guarded(agent), guarded(page, "time"), guarded(page, "relevance")]
    threads += [guarded(read, k) for k in range(READERS)]
    for thread in threads:
        thread.start()
    started = time.monotonic()

    def enough(when: str) -> bool:
        """Both pagings made, and 20 words searched for, all while the tape's docs were `when`."""
        return all(seen[f"{order}, {when}"] for order in pagings) and seen[when] >= 20

    while not wrong and time.monotonic() < started + DEADLINE:
        if enough("fresh") and time.monotonic() > started + HOLD:
            release.set()  # the server moves the tape's docs while the readers go on
        if release.is_set() and enough("moved"):
            break
        time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join(TIMEOUT)
        assert not thread.is_alive()

    assert not wrong, wrong[:5]
    assert set(answers) == {200} and sum(answers.values()) > 100, answers
    assert enough("fresh") and enough("moved"), seen  # read while the docs were fresh, and once moved
    assert seen["agent's fresh"], seen  # the agent's entries were made fresh too, and moved
    assert len(found_at) > 50 and any(word.startswith("burst") for word in found_at), sorted(found_at)

    # All of it searchable once the pass caught up, and all of it moved into the GIN index once idle.
    caught_up(api, base, tape, seconds=60)
    with psycopg.connect(url, autocommit=True) as conn:
        deadline = time.monotonic() + 30
        left = "SELECT (SELECT count(*) FROM search_fresh) + (SELECT count(*) FROM search_chunk)"
        while conn.execute(left).fetchone()[0]:
            assert time.monotonic() < deadline, "fresh docs left 30 s after the agent stopped"
            time.sleep(0.2)
    for order, (first, *_) in pagings.items():
        assert page_all(api, base, q="tenth", order=order) == first, order
    for b, (low, high) in bursts.items():
        check(f"burst{b}", search(api, f"burst{b}"), list(range(high, low - 1, -1)), due=True)
    for word in random.Random(0).sample(sorted(first_answer), min(100, len(first_answer))):
        check(word, search(api, word), [hit["pos"] for hit in first_answer[word]], due=True)
    assert not wrong, wrong[:5]
    newest = search(api, "common")[2][:20]
    assert [hit["pos"] for hit in newest] == list(range(written[0], written[0] - 20, -1))
