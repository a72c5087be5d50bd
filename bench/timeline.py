"""Time the timeline page in the middle of a long tape: the full page and its htmx fragment.

    python bench/timeline.py [--tape-dir bench/out/corpus-0.05/big] [--runs 21] [--profile]

Indexes the folder's Bub tape(s) once into a throwaway database (SQLite, or PostgreSQL when
TAPEVIEW_DATABASE_URL names a server: `.ci/postgres_server.py -- python bench/timeline.py`), then
prints, for `/tapes/<key>/?at=<entries // 2>`, the median of `--runs` requests after a warm-up,
the queries per request, how the time splits between SQL and everything else (rendering), and
the CPU time this process spent (steadier than the wall time on a machine others load too);
then the same with nothing the page keeps in the cache ("cold"); then the first draw after an
append of 100 entries ("after append": 100 real-looking entries written to the tape, the index
refreshed, the page drawn once; `--runs` times), what a reader of a live tape mostly gets
(`--only appended`: those rows alone). The tapes are indexed from a copy in a temporary folder
(the appends never touch `--tape-dir`). `--sql [warm|appended]` prints one page's queries.
"""

from __future__ import annotations

import argparse
import itertools
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.harness import start_django, timed, viewer_client  # noqa: E402

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "entries"}


class SqlClock:
    """A database execute wrapper that counts the queries and the seconds spent in them."""

    def __init__(self) -> None:
        self.queries, self.seconds = 0, 0.0

    def __call__(self, execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.seconds += time.perf_counter() - start
            self.queries += 1


# What the timeline page keeps (tapes.pictures.state_key's kinds, and prefix_key's that an append
# leaves: the cards, the turns before the page, the phase table's rows, the index's chunk summaries);
# the strip and the sparkline were kept before it, and the rest of the cache (the sources' last scan)
# stays. The "appended" rows drop nothing.
KEPT = (
    "timeline",
    "cards",
    "turn-before",
    "budget",
    "phase-table",
    "phase-rows",
    "chunk-summaries",
    "phase-bars",
)
APPENDED = 100  # entries a round of the "after append" rows writes


def forget_kept(cache) -> None:
    """Drop what the page keeps from the (local memory) cache, as if the tape had just changed."""
    for key in list(cache._cache):
        if any(f"tapeview:pictures:{kind}:" in key for kind in KEPT):
            cache.delete(key.split(":", 2)[2])  # the key as made, without its prefix and version


def measure(client, url: str, headers: dict, runs: int, cold: bool = False, before=None) -> dict:
    """Median wall time, median SQL time and the queries of one request, over `runs` requests;
    `cold`: with nothing kept in the cache (as the first reader after the tape grew); `before`:
    called before each request (an append)."""
    from django.core.cache import cache
    from django.db import connection

    response = client.get(url, **headers)  # warm-up: templates compiled, caches filled
    assert response.status_code == 200, response.content[:300]
    walls, sqls, counts, cpus = [], [], [], []
    for _ in range(runs):
        if cold:
            forget_kept(cache)
        if before:
            before()
        clock = SqlClock()
        with connection.execute_wrapper(clock):
            cpu = time.process_time()
            seconds, response = timed(lambda: client.get(url, **headers))
            cpus.append((time.process_time() - cpu) * 1000)
        assert response.status_code == 200
        walls.append(seconds * 1000)
        sqls.append(clock.seconds * 1000)
        counts.append(clock.queries)
    return {
        "ms": statistics.median(walls),
        "cpu_ms": statistics.median(cpus),  # this process's CPU time: what another's load leaves alone
        "sql_ms": statistics.median(sqls),
        "queries": max(counts),
        "kb": len(response.content) / 1024,
    }


class Appender:
    """Writes the next entries of the tape as Bub appends them (ids going on from the tape's last)."""

    def __init__(self, tape) -> None:
        from datetime import UTC, datetime

        from tapeview.demodata.bub import bub_line, bub_turns

        start = datetime.now(UTC).replace(microsecond=0)
        turns = bub_turns(random.Random("appended"), (tape.last_id or 0) + 1, start, handoff_every=10_000)
        self.lines = (bub_line(entry) for entry in turns)
        self.path = Path(tape.path)

    def append(self, n: int) -> None:
        with self.path.open("a", encoding="utf-8", newline="\n") as f:
            f.write("".join(itertools.islice(self.lines, n)))


def after_appends(client, tape, url: str, headers: dict, runs: int) -> dict:
    """The first draw after each of `runs` appends of APPENDED entries (the index refreshed first)."""
    from tapeview.tapes import index

    appender = Appender(tape)

    def append() -> None:
        appender.append(APPENDED)
        index.refresh(tape)

    return measure(client, url, headers, runs, before=append)


def copied(folder: Path) -> Path:
    """The folder's tapes copied to a temporary folder (removed at exit), for appending to."""
    import atexit

    copy = Path(tempfile.mkdtemp(prefix="tapeview-bench-tapes-"))
    atexit.register(shutil.rmtree, copy, ignore_errors=True)
    for tape in folder.glob("*.jsonl"):
        shutil.copyfile(tape, copy / tape.name)
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tape-dir", type=Path, default=HERE / "out" / "corpus-0.05" / "big")
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--rounds", type=int, default=1, help="measure both pages this many times")
    parser.add_argument(
        "--only", choices=("appended",), help="measure only these rows (the first draws after appends)"
    )
    parser.add_argument(
        "--profile", choices=("warm", "cold", "appended"), help="print a cProfile of the full page"
    )
    parser.add_argument("--htmx", action="store_true", help="profile the htmx fragment instead")
    parser.add_argument("--sort", default="cumulative", help="the profile's order")
    parser.add_argument(
        "--sql",
        nargs="?",
        const="warm",
        choices=("warm", "appended"),
        help="print the SQL of one full page (htmx: its fragment), or of the first draw after an append",
    )
    args = parser.parse_args()

    start_django()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tapeview.sources import parse_sources
    from tapeview.tapes import discovery, index
    from tapeview.tapes.models import Tape

    folder = copied(args.tape_dir.resolve())
    index_s, _ = timed(lambda: discovery.sync(parse_sources([f"bench=bub:{folder}"])))
    tape = Tape.objects.filter(source="bench").order_by("-next_pos").first()
    assert tape is not None, f"no Bub tape in {args.tape_dir}"
    n = tape.entries
    url = f"/tapes/{tape.key}/?at={n // 2}"
    client = viewer_client()
    database = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
    print(f"{database}: {n:,} entries indexed in {index_s:.1f} s; {url}")

    steady = (
        ("full page", {}, False),
        ("htmx fragment", HTMX, False),
        ("full, cold", {}, True),
        ("htmx, cold", HTMX, True),
    )
    for _ in range(args.rounds):
        for name, headers, cold in steady if args.only is None else ():
            m = measure(client, url, headers, args.runs, cold)
            print(
                f"{name:<14} {m['ms']:7.1f} ms p50 of {args.runs}  sql {m['sql_ms']:6.1f} ms  "
                f"other {m['ms'] - m['sql_ms']:6.1f} ms  {m['queries']:3d} queries  {m['kb']:.0f} KB  "
                f"cpu {m['cpu_ms']:6.1f} ms"
            )
        for name, headers in (("full, appended", {}), ("htmx, appended", HTMX)):
            tape.refresh_from_db()
            m = after_appends(client, tape, url, headers, args.runs)
            print(
                f"{name:<14} {m['ms']:7.1f} ms p50 of {args.runs}  sql {m['sql_ms']:6.1f} ms  "
                f"other {m['ms'] - m['sql_ms']:6.1f} ms  {m['queries']:3d} queries  {m['kb']:.0f} KB  "
                f"cpu {m['cpu_ms']:6.1f} ms"
            )

    if args.sql:
        headers = HTMX if args.htmx else {}
        if args.sql == "appended":
            tape.refresh_from_db()
            Appender(tape).append(APPENDED)
            index.refresh(tape)
        with CaptureQueriesContext(connection) as asked:
            client.get(url, **headers)
        for q in asked.captured_queries:
            print(f"{q['time']:>7} {q['sql'][:220]}")
    if args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        from django.core.cache import cache

        headers = HTMX if args.htmx else {}
        tape.refresh_from_db()
        appender = Appender(tape)

        def request() -> None:
            if args.profile == "cold":
                forget_kept(cache)
            if args.profile == "appended":
                appender.append(APPENDED)
                profile.disable()  # the index's refresh is not the page's
                index.refresh(tape)
                profile.enable()
            client.get(url, **headers)

        profile.runcall(lambda: [request() for _ in range(10)])
        pstats.Stats(profile).sort_stats(args.sort).print_stats(250)


if __name__ == "__main__":
    main()
