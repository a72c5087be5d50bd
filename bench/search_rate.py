"""Full-text search alone: the catch-up pass against raw, and search p50 against grep.

    python bench/search_rate.py [--scale S | --corpus DIR] [--keep DIR] [--runs N] [--only catchup|search]
    python bench/search_rate.py --real      # the catch-up alone, of the 200,000-entry real tape
    python .ci/postgres_server.py -- python bench/search_rate.py ...      # on PostgreSQL
    python bench/search_rate.py --only common --db both   # a common word's search page, both databases

The same rows as bench/scale.py's, measured the same way, without the rest of its table:

- catch-up: the real tape indexed into a fresh database (a process of its own) with the search
  receiver of `entries_indexed` disconnected, then `catch_up()` timed, against `orjson.loads` of
  every line of the same file read in this run (bench/harness.py `raw_parse`);
- search: `engine.search` (first page of hits) of bench/scale.py's 20 terms over the whole corpus,
  unfiltered and filtered by kind, date and source, against `grep -F -c -r TERM many big real`
  timed per term in the same run; each term's time is the median of --runs rounds, a round
  timing the term unfiltered and with each filter one after another (bench/scale.py search_times).

With --only common: what the search page asks of the engine for each of COMMON (its first page of
hits, then the total and each shown tape's count, capped), and the exact total (`?count=exact`),
p50 of --runs, against `grep -F -c -r` of the term in the same run; `--db both` measures SQLite and
then PostgreSQL (a throwaway server), each in a process of its own, and prints their ratio.

With --real only the catch-up row is measured, of the corpus's real tape at its full size (200,000
entries, as at scale 1) made alone in bench/out/catchup-real/, without the rest of the corpus.

With --keep DIR the searched database is kept in DIR (SQLite) and indexed only the first time; on
PostgreSQL --keep uses the database TAPEVIEW_DATABASE_URL names (made if missing) and leaves it there,
so it only helps against a server that outlives the run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import corpus  # noqa: E402
from bench.harness import raw_parse, start_django, timed, upkeep  # noqa: E402
from bench.scale import FILTERS, TERMS, Row, print_table, search_result_rows, search_times, yes  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.4)
    parser.add_argument("--corpus", type=Path, help="the corpus folder (default bench/out/corpus-<scale>)")
    parser.add_argument("--keep", type=Path, help="keep the searched database here between runs")
    parser.add_argument("--runs", type=int, default=3, help="calls per term timed (their median)")
    parser.add_argument("--only", choices=("catchup", "search", "common"))
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), help="with --only common")
    parser.add_argument("--terms", action="store_true", help="print each term's times too")
    parser.add_argument("--real", action="store_true", help="the catch-up of the real tape only")
    parser.add_argument("--catchup-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = args.corpus or HERE / "out" / f"corpus-{args.scale:g}"
    if args.catchup_child:
        return catchup_child(folder)
    db = "postgres" if os.environ.get("TAPEVIEW_DATABASE_URL", "").startswith("postgres") else "sqlite"
    if args.real:
        folder = HERE / "out" / "catchup-real"
        if not any((folder / "real").glob("*.jsonl")):
            corpus.write_real(folder / "real", corpus.Sizes.at(1.0).real)
        real = corpus.real_tape(folder)
        manifest = {"scale": 1, "bytes": real.stat().st_size}
        print_table(f"{db}, the real tape alone", manifest, [catchup_row(folder)])
        return 0
    manifest = corpus.ensure(folder, args.scale)
    if args.only == "common":
        return common(folder, manifest, args)
    rows = []
    if args.only != "search":
        rows.append(catchup_row(folder))
    if args.only != "catchup":
        rows += search_rows(folder, manifest, args)
    print_table(db, manifest, rows)
    return 0


def catchup_child(folder: Path) -> int:
    """In a fresh database: the real tape indexed without its docs, then the search pass timed."""
    start_django()
    from tapeview.search import backends, catchup
    from tapeview.sources import parse_sources
    from tapeview.tapes import discovery, signals

    signals.entries_indexed.disconnect(dispatch_uid="search.entries_indexed")
    real = corpus.real_tape(folder)
    discovery.sync(parse_sources([f"real=bub:{real.parent}"]))
    server = server_cpu()
    cpu = time.process_time()
    seconds, made = timed(catchup.catch_up)
    cpu = time.process_time() - cpu
    spent = server() if server else None
    # After the pass every entry is searchable; PostgreSQL's fresh docs (search.fresh) then go into the
    # GIN index behind it. The search p50 of the bench's terms before and after that, and its time.
    before = _p50(TERMS)
    refined, _ = timed(lambda: backends.current().refine(None))
    after = _p50(TERMS)
    timing = {"seconds": seconds, "cpu": cpu, "server": spent, "made": made}
    print(json.dumps({**timing, "refined": refined, "before": before, "after": after}))
    return 0


def _p50(terms: list[str]) -> float:
    """The median of one search of each term, in ms."""
    from tapeview.search import engine

    return statistics.median(timed(lambda t=t: engine.search(t, limit=20))[0] * 1000 for t in terms)


def server_cpu() -> Callable[[], float] | None:
    """Where the database is a PostgreSQL server on this machine (as the bench's is): what gives the
    CPU seconds its backend for this process spent since now."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    stat, name = Path(f"/proc/{pid}/stat"), Path(f"/proc/{pid}/comm")
    if not name.exists() or name.read_text().strip() != "postgres":  # a server elsewhere
        return None

    def spent() -> float:
        fields = stat.read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    start = spent()
    return lambda: spent() - start


def catchup_row(folder: Path) -> Row:
    """The catch-up's seconds against the median of raw runs before and after it (the machine is
    shared: one short raw run says little); its CPU seconds against theirs on a line of its own."""
    real = corpus.real_tape(folder)
    raws = [_raw_cpu(real) for _ in range(3)]
    child = [sys.executable, __file__, "--catchup-child", "--corpus", str(folder)]
    done = subprocess.run(child, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"the catch-up child failed:\n{done.stderr[-3000:]}")
    raws += [_raw_cpu(real) for _ in range(3)]
    timing = json.loads(done.stdout.strip().splitlines()[-1])
    seconds, cpu, server = timing["seconds"], timing["cpu"], timing["server"]
    n = raws[0][2]
    raw = statistics.median(r[0] for r in raws)
    raw_cpu = statistics.median(r[1] for r in raws)
    spent = f"{cpu:.2f} s CPU of its process"
    if server is not None:
        spent += f", {server:.2f} s of its database server's"
    raw_runs = ", ".join(f"{r[0]:.3f}" for r in raws)
    print(
        f"catch-up: {seconds:.2f} s wall, {spent}; "
        f"raw {raw:.3f} s wall, {raw_cpu:.3f} s CPU (median of 6: {raw_runs})"
    )
    print(
        f"then its docs moved into the GIN index (PostgreSQL's fresh docs) in {timing['refined']:.2f} s; "
        f"search p50 of {len(TERMS)} terms over the tape {timing['before']:.1f} ms before, "
        f"{timing['after']:.1f} ms after"
    )
    ratio = raw / seconds
    return Row(
        "full-text search catching up after a cold index",
        f"{n / seconds:,.0f} entries/s ({seconds:.2f} s)",
        f"{n / raw:,.0f} entries/s",
        f"{ratio:.3f}x",
        ">= 0.1x raw",
        yes(ratio >= 0.1),
    )


def _raw_cpu(path: Path) -> tuple[float, float, int]:
    cpu = time.process_time()
    seconds, n = raw_parse(path, runs=1)  # one read: timed with its CPU, six times
    return seconds, time.process_time() - cpu, n


def searched_database(folder: Path, keep: Path | None) -> None:
    """Django on the searched database: kept (and indexed the first time) with --keep, else fresh."""
    url = os.environ.get("TAPEVIEW_DATABASE_URL", "")
    if keep is None:
        start_django()
    else:
        keep.mkdir(parents=True, exist_ok=True)
        if url.startswith("postgres"):
            _ensure_pg_database(url)
        start_django(keep)
    from tapeview.search import catchup
    from tapeview.sources import parse_sources
    from tapeview.tapes import discovery
    from tapeview.tapes.models import Tape

    if not Tape.objects.exists():
        big, real = corpus.big_tape(folder), corpus.real_tape(folder)
        specs = [f"big=bub:{big.parent}", f"real=bub:{real.parent}", f"many=bub:{folder / 'many'}"]
        seconds, _ = timed(lambda: discovery.sync(parse_sources(specs)))
        print(f"indexed {Tape.objects.count():,} tapes in {seconds:.0f} s", flush=True)
    seconds, made = timed(catchup.catch_up)
    if made:
        print(f"made {made:,} entries searchable in {seconds:.0f} s", flush=True)
    upkeep()


def _ensure_pg_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    admin = parts._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        name = parts.path.lstrip("/")
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


COMMON = ("pytest", "rows")  # words of many entries, in many tapes: each page shows tapes' counts


def common(folder: Path, manifest: dict, args: argparse.Namespace) -> int:
    """A common word's search page on one database, or on both (`--db both`) in a process each."""
    if args.db != "both":
        searched_database(folder, args.keep)
        times = common_times(args.runs)
        print("COMMON " + json.dumps(times), flush=True)
        return 0
    found = {}
    for db in ("sqlite", "postgres"):
        own = [sys.executable, __file__, "--only", "common", "--db", db, "--corpus", str(folder)]
        own += ["--scale", str(args.scale), "--runs", str(args.runs)]
        env = {k: v for k, v in os.environ.items() if k not in ("TAPEVIEW_DATABASE_URL", "DATABASE_URL")}
        if db == "postgres":
            own = [sys.executable, str(HERE.parent / ".ci" / "postgres_server.py"), "--", *own]
        done = subprocess.run(own, env=env, capture_output=True, text=True, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("COMMON ")]
        if done.returncode or not lines:
            sys.exit(f"the {db} child failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
        found[db] = json.loads(lines[-1].removeprefix("COMMON "))
    tapes = [str(folder / part) for part in ("many", "big", "real")]
    grepped = {
        term: timed(
            lambda t=term: subprocess.run(["grep", "-F", "-c", "-r", t, *tapes], capture_output=True)
        )[0]
        for term in COMMON
    }
    size = f"corpus scale {manifest['scale']:g}, {manifest['bytes'] / 1e6:,.0f} MB"
    print(f"\n### a common word's search page ({size})\n")
    print("| term | | SQLite ms | PostgreSQL ms | PostgreSQL / SQLite | grep ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for term in COMMON:
        for part in ("page", "hits", "counts", "exact"):
            lite, pg = found["sqlite"][term][part], found["postgres"][term][part]
            total = found["postgres"][term]["total"]
            name = f"exact total ({total:,})" if part == "exact" else part
            cells = [
                f"{lite * 1000:.1f}",
                f"{pg * 1000:.1f}",
                f"{pg / lite:.2f}x",
                f"{grepped[term] * 1000:,.0f}",
            ]
            print(f"| {term} | {name} | " + " | ".join(cells) + " |")
    return 0


def common_times(runs: int) -> dict[str, dict[str, float]]:
    """Each of COMMON: the median seconds of the page's hits, its counts (the total and each shown tape's,
    capped), both together, and the exact total; besides, the exact total itself."""
    from tapeview.search import engine

    found: dict[str, dict[str, float]] = {}
    for term in COMMON:
        engine.search(term)  # the page cache warm, as grep's is after its first run
        times: dict[str, list[float]] = {"page": [], "hits": [], "counts": [], "exact": []}
        for _ in range(runs):
            seconds, hits = timed(lambda t=term: engine.search(t, limit=51))
            shown = {hit.tape_key for hit in hits[:50]}
            counted, _ = timed(lambda t=term, s=shown: engine.count(t, tapes=s))
            times["hits"].append(seconds)
            times["counts"].append(counted)
            times["page"].append(seconds + counted)
            exact, total = timed(lambda t=term: engine.count(t, exact=True))
            times["exact"].append(exact)
        found[term] = {part: statistics.median(t) for part, t in times.items()}
        found[term]["total"] = total.total
    return found


def search_rows(folder: Path, manifest: dict, args: argparse.Namespace) -> list[Row]:
    searched_database(folder, args.keep)
    from tapeview.search import engine

    engine.search("warm up the connection and the page cache")
    times = search_times(FILTERS, args.runs)
    searched, filtered = times.pop(""), times
    tapes = [str(folder / part) for part in ("many", "big", "real")]
    grep = ["grep", "-F", "-c", "-r"]
    grepped = {
        term: timed(lambda t=term: subprocess.run([*grep, t, *tapes], capture_output=True))[0]
        for term in TERMS
    }
    if args.terms:
        print("\n| term | unfiltered ms | " + " | ".join(f"{n} ms" for n in FILTERS) + " | grep ms |")
        print("| --- " * (3 + len(FILTERS)) + "|")
        for term in TERMS:
            cells = [searched[term], *(filtered[n][term] for n in FILTERS), grepped[term]]
            print(f"| {term} | " + " | ".join(f"{s * 1000:.1f}" for s in cells) + " |")
    p50, grep_p50 = statistics.median(searched.values()), statistics.median(grepped.values())
    medians = {name: statistics.median(per_term.values()) for name, per_term in filtered.items()}
    counts = manifest["counts"]
    entries = counts["tapes"]["entries"] + counts["big"]["entries"] + counts["real"]["entries"]
    return search_result_rows(entries, p50, grep_p50, medians)


if __name__ == "__main__":
    sys.exit(main())
