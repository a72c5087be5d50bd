"""The scale benchmark: every row of its table, measured, on SQLite and PostgreSQL.

    python bench/scale.py [--scale S] [--db sqlite|postgres|both] [--corpus DIR] [--runs N]

Builds (or reuses) the corpus of bench/corpus.py at --scale (default bench/out/corpus-<scale>),
then for each database prints one table: each figure as measured, the raw or grep figure from the
same run (`orjson.loads` per line of the same file; `grep -F -c -r` over the same tapes), the
ratio to it, the target, and whether it is met. PostgreSQL runs on a throwaway server
(.ci/postgres_server.py). docs/performance.md holds the results and what they mean.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import corpus  # noqa: E402
from bench.harness import median_ms, raw_parse, start_django, timed, upkeep, viewer_client  # noqa: E402

# Common and rare words of the corpus: tool names and code of the generated turns, words only
# the real sample, the nanobot sessions or a few turns hold.
TERMS = (
    "pytest", "delimiter", "rows", "sorted", "IndexError", "handoff", "split_row", "column_stats",
    "guess_delimiter", "natural_key", "CRLF", "BOM", "header", "phase", "passed",
    "not_found", "gpt-4o-mini", "Caddy", "heartbeat", "zzyzx",
)  # fmt: skip
SESSION_INDEX_PAUSE = 1.0  # seconds between its requests: shorter than the page's 2 s, as much load or more
NOT_SEPARATE = "same pass (not separate yet)"


@dataclass(frozen=True)
class Row:
    figure: str
    measured: str
    raw: str
    ratio: str
    target: str
    met: str


def yes(ok: bool) -> str:
    return "yes" if ok else "NO"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiplies the corpus (default 1: full size)"
    )
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--corpus", type=Path, help="the corpus folder (default bench/out/corpus-<scale>)")
    parser.add_argument("--seed", default="bench")
    parser.add_argument("--runs", type=int, default=5, help="calls per page timed (their median)")
    parser.add_argument("--refreshes", type=int, default=30, help="session index requests, 1 s apart")
    # The processes this command starts: one measuring each database, and the indexers it times.
    parser.add_argument("--measure", metavar="DB", help=argparse.SUPPRESS)
    parser.add_argument("--index", metavar="SPEC", help=argparse.SUPPRESS)
    parser.add_argument("--fresh", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-full-text", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scale <= 0:
        parser.error("--scale must be above 0")
    folder = args.corpus or HERE / "out" / f"corpus-{args.scale:g}"
    if args.index:
        return index_child(args.index, args.fresh, args.no_full_text)
    if args.measure:
        manifest = json.loads((folder / "manifest.json").read_text())
        print_table(
            args.measure, manifest, measure(folder, manifest, args.measure, args.runs, args.refreshes)
        )
        return 0
    made, manifest = timed(lambda: corpus.ensure(folder, args.scale, args.seed))
    print(
        f"corpus {folder}: {manifest['bytes'] / 1e6:,.0f} MB, {json.dumps(manifest['counts'])} ({made:.0f} s)"
    )
    # A corpus just written leaves gigabytes for the kernel to write back, not to be timed with the first
    # database (at scale 1 its rows ran 10-30% slower than a run on the corpus kept: docs/performance.md).
    os.sync()
    failed = 0
    for db in ("sqlite", "postgres") if args.db == "both" else (args.db,):
        failed |= run_measure(db, folder, args)
    return failed


def run_measure(db: str, folder: Path, args: argparse.Namespace) -> int:
    """Measure one database in a process of its own (on PostgreSQL, the child of a throwaway server)."""
    own = [sys.executable, __file__, "--measure", db, "--corpus", str(folder), "--runs", str(args.runs)]
    own += ["--refreshes", str(args.refreshes)]
    env = {k: v for k, v in os.environ.items() if k not in ("TAPEVIEW_DATABASE_URL", "DATABASE_URL")}
    if db == "postgres":
        own = [sys.executable, str(HERE.parent / ".ci" / "postgres_server.py"), "--", *own]
    sys.stdout.flush()
    return subprocess.run(own, env=env).returncode


def index_child(spec: str, fresh: bool, no_full_text: bool) -> int:
    """Index one source in this process, print the seconds (and a full-text catch-up's, if any).

    In the parent's home and database, or with --fresh in new ones; with --no-full-text the
    entries are indexed without their search docs, which a catch-up (if there is one) then adds.
    """
    start_django(None if fresh else Path(os.environ["TAPEVIEW_HOME"]))
    from tapeview.sources import parse_sources
    from tapeview.tapes import discovery, signals

    if no_full_text:
        signals.entries_indexed.disconnect(dispatch_uid="search.entries_indexed")
    seconds, _ = timed(lambda: discovery.sync(parse_sources([spec])))
    copies = copy_pass(parse_sources([spec])[0].label)
    catch_up = search_pass()
    caught_up = timed(catch_up)[0] if no_full_text and catch_up else None
    print(json.dumps({"seconds": seconds, "catch_up": caught_up, "copies": copies}))
    return 0


def copy_pass(source: str) -> tuple[float, int] | None:
    """A fleet's file copies, the pass behind the index (where TAPEVIEW_COPY_FILES is on, as it is by
    default with PostgreSQL): its seconds and the bytes copied, or None where copies are off."""
    from tapeview.tapes import filecopy
    from tapeview.tapes.models import FileCopy, Tape

    if not filecopy.enabled():
        return None
    seconds, _ = timed(lambda: filecopy.keep_tapes(Tape.objects.filter(source=source)))
    return seconds, sum(FileCopy.objects.filter(tape__source=source).values_list("size", flat=True))


def search_pass() -> Callable[[], object] | None:
    """Full-text search's own catch-up pass, where it is one (it is being split off the index now)."""
    for name in ("tapeview.search.feed", "tapeview.search.catchup"):
        with suppress(ImportError):
            catch_up = getattr(importlib.import_module(name), "catch_up", None)
            if callable(catch_up):
                return catch_up
    return None


def spawn_index(spec: str, *flags: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--index", spec, *flags], capture_output=True, text=True, check=False
    )
    if done.returncode:
        sys.exit(f"indexing {spec} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(folder: Path, manifest: dict, db: str, runs: int, refreshes: int) -> list[Row]:
    start_django()
    from tapeview.sources import parse_sources
    from tapeview.tapes import discovery
    from tapeview.tapes.models import Tape

    big, real = corpus.big_tape(folder), corpus.real_tape(folder)
    # A sync drops the tapes of sources it is not given: each one names those indexed before it too.
    specs = [f"big=bub:{big.parent}", f"real=bub:{real.parent}", f"many=bub:{folder / 'many'}"]
    # First, before any other child: RUSAGE_CHILDREN keeps the largest child's peak.
    raw_big, n_big = raw_parse(big)
    big_run = spawn_index(specs[0])
    big_index = big_run["seconds"]
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    raw_real, n_real = raw_parse(real)
    real_index, _ = timed(lambda: discovery.sync(parse_sources(specs[:2])))
    bare = spawn_index(specs[1], "--fresh", "--no-full-text")
    many_index, _ = timed(lambda: discovery.sync(parse_sources(specs)))
    catch_up = search_pass()
    if catch_up:  # full-text search as a pass of its own: made whole before searches are timed
        catch_up()
        upkeep(f"[{db}] ")
    entries = manifest["counts"]["tapes"]["entries"] + n_big + n_real
    print(
        f"[{db}] indexed {entries:,} entries of {Tape.objects.count():,} tapes ({many_index:.0f} s for many/)"
    )

    client = viewer_client()
    tape = Tape.objects.get(source="big")
    rows = cold_index_rows(db, n_real, raw_real, real_index, bare, n_big, raw_big, big_index)
    if big_run.get("copies"):  # the copy pass on its own line: the cold index rows are the index alone
        seconds, size = big_run["copies"]
        copied = f"{seconds:.2f} s, {size / 1e6 / seconds:,.0f} MB/s"
        rows.insert(2, Row(f"file copies after the cold index, {n_big:,}-entry tape", copied, *"----"))
    rows += search_rows(folder, entries, runs)
    rows += context_rows(client, tape, big, runs)
    with appending(big) as append:  # the 1M tape grows by 100 entries at a time, cut back after
        incremental = incremental_row(tape, append, runs)
        rows += timeline_rows(client, tape, append, n_big, runs)
    rows += serve_rows(folder, manifest["counts"]["tapes"]["count"], refreshes)
    rows += [incremental, peak_row(peak_mb, n_big)]
    return rows


def rate_cell(n: int, seconds: float) -> str:
    return f"{n / seconds:,.0f} entries/s"


def cold_index_rows(
    db: str,
    n_real: int,
    raw_real: float,
    real_index: float,
    bare: dict,
    n_big: int,
    raw_big: float,
    big_index: float,
) -> list[Row]:
    real_ratio, bare_ratio, big_ratio = raw_real / real_index, raw_real / bare["seconds"], raw_big / big_index
    real = Row(
        f"cold index, real {n_real:,}-entry Bub tape",
        f"{real_ratio:.3f}x raw ({bare_ratio:.3f}x without full-text); {rate_cell(n_real, real_index)}",
        rate_cell(n_real, raw_real),
        f"{real_ratio:.3f}x",
        ">= 0.5x raw",
        yes(real_ratio >= 0.5),
    )
    one = Row(
        f"cold index, {n_big:,}-entry tape",
        f"{big_ratio:.3f}x raw; {rate_cell(n_big, big_index)}",
        rate_cell(n_big, raw_big),
        f"{big_ratio:.3f}x",
        ">= 0.5x",
        yes(big_ratio >= 0.5),
    )
    if db == "postgres":
        pg = Row(
            "cold index on PostgreSQL",
            f"{real_ratio:.3f}x raw (row 1)",
            "-",
            f"{real_ratio:.3f}x",
            ">= 0.3x",
            yes(real_ratio >= 0.3),
        )
    else:
        pg = Row("cold index on PostgreSQL", "- (this is SQLite)", "-", "-", ">= 0.3x", "-")
    if bare["catch_up"] is None:
        fts = Row(
            "full-text search catching up after a cold index", NOT_SEPARATE, "-", "-", ">= 0.1x raw", "NO"
        )
    else:
        ratio = raw_real / bare["catch_up"]
        fts = Row(
            "full-text search catching up after a cold index",
            f"{rate_cell(n_real, bare['catch_up'])} ({bare['catch_up']:.1f} s)",
            rate_cell(n_real, raw_real),
            f"{ratio:.3f}x",
            ">= 0.1x raw",
            yes(ratio >= 0.1),
        )
    return [real, one, pg, fts]


def search_rows(folder: Path, entries: int, runs: int) -> list[Row]:
    """p50 over TERMS of the engine's first page of hits, against `grep -F -c -r` of the same tapes."""
    from tapeview.search import engine

    engine.search("warm up the connection and the page cache")
    times = search_times(FILTERS, runs)
    tapes = [str(folder / part) for part in ("many", "big", "real")]
    grepped = {
        term: timed(
            lambda term=term: subprocess.run(["grep", "-F", "-c", "-r", term, *tapes], capture_output=True)
        )[0]
        for term in TERMS
    }
    p50, grep_p50 = statistics.median(times.pop("").values()), statistics.median(grepped.values())
    filtered = {name: statistics.median(per_term.values()) for name, per_term in times.items()}
    return search_result_rows(entries, p50, grep_p50, filtered)


FILTERS = {
    "kind": {"kinds": ["tool_call"]},
    "date": {"since": corpus.NOW - timedelta(days=90)},
    "source": {"source": "many"},
}


def search_times(filters: dict[str, dict], runs: int) -> dict[str, dict[str, float]]:
    """Each term's median seconds for the engine's first page of hits, unfiltered ("") and with each
    filter, over `runs` rounds. A round times a term's searches one after another (its page cache
    warm from the first): a slow moment of a shared machine falls on all of them alike, not on one
    block of them, so the filters' ratio to the unfiltered p50 is their own."""
    from tapeview.search import engine

    for term in TERMS:  # the page cache warm for every term, as grep's is after its first run
        engine.search(term)
    variants = {"": {}, **filters}
    times: dict[str, dict[str, list[float]]] = {name: {term: [] for term in TERMS} for name in variants}
    for _ in range(runs):
        for term in TERMS:
            for name, f in variants.items():
                times[name][term].append(timed(lambda term=term, f=f: engine.search(term, **f))[0])
    return {name: {term: statistics.median(t) for term, t in per.items()} for name, per in times.items()}


def search_result_rows(entries: int, p50: float, grep_p50: float, filtered: dict[str, float]) -> list[Row]:
    """The two search rows: the p50 against grep's, and the slowest filter against the p50 (seconds)."""
    slowest = max(filtered, key=filtered.get)
    return [
        Row(
            f"search p50 over {len(TERMS)} terms, {entries:,} entries",
            f"{p50 * 1000:.1f} ms",
            f"grep {grep_p50 * 1000:,.0f} ms",
            f"{grep_p50 / p50:.1f}x faster than grep",
            "< 50 ms and >= 20x grep",
            yes(p50 < 0.05 and grep_p50 / p50 >= 20),
        ),
        Row(
            "search p50 with a filter (kind, date, source)",
            ", ".join(f"{name} {s * 1000:.1f} ms" for name, s in filtered.items()),
            f"unfiltered {p50 * 1000:.1f} ms",
            f"{filtered[slowest] / p50:.2f}x ({slowest})",
            "no slower (<= 1.1x)",
            yes(filtered[slowest] / p50 <= 1.1),
        ),
    ]


def context_rows(client: Any, tape: Any, path: Path, runs: int) -> list[Row]:
    """The context preview's first page after the last and the middle anchor of the 1M tape."""
    from tapeview.tapes import rows as index_rows
    from tapeview.tapes.models import Anchor

    anchors = list(Anchor.objects.filter(tape=tape).order_by("pos"))
    rows = []
    for label, anchor in (("last", anchors[-1]), ("middle", anchors[len(anchors) // 2])):
        url = f"/tapes/{tape.key}/context?anchor={anchor.pos}"
        client.get(url)  # warm up: templates, the page cache of the file
        ms, response = median_ms(lambda url=url: client.get(url), runs)
        assert response.status_code == 200, response.content[:300]
        first = index_rows.at(tape, anchor.pos + 1)
        raw_s, n = raw_parse(path, first.offset) if first else (0.0, 0)
        rows.append(
            Row(
                f"context preview after the {label} anchor (pos {anchor.pos:,})",
                f"{ms:.1f} ms p50, {len(response.content) / 1e6:.2f} MB of HTML",
                f"raw {raw_s * 1000:,.0f} ms ({n:,} entries after it)",
                f"{ms / 50:.2f}x target",
                "p50 < 50 ms",
                yes(ms < 50),
            )
        )
    return rows


def timeline_rows(client: Any, tape: Any, append: Callable[[], int], entries: int, runs: int) -> list[Row]:
    """The page drawn before (a page keeps what it drew: tapes.views.timeline), the first draw after
    the tape grew by 100 entries (what a live tape's reader mostly gets: what an append leaves alone
    is kept), and the first draw with nothing kept (after a restart: the cache emptied first)."""
    from django.core.cache import cache

    from tapeview.tapes import index

    url = f"/tapes/{tape.key}/?at={entries // 2}"
    client.get(url)
    ms, response = median_ms(lambda: client.get(url), runs)
    assert response.status_code == 200, response.content[:300]
    after = []
    for _ in range(runs):
        append()
        index.refresh(tape)
        after.append(timed(lambda: client.get(url))[0] * 1000)
    after_ms = statistics.median(after)
    cold_ms, _ = median_ms(lambda: (cache.clear(), client.get(url))[1], runs)
    return [
        Row(
            f"timeline page, middle of the {entries:,}-entry tape (drawn before)",
            f"{ms:.1f} ms p50",
            "-",
            f"{ms / 30:.2f}x target",
            "< 30 ms",
            yes(ms < 30),
        ),
        Row(
            "timeline page, the first draw after 100 entries were appended",
            f"{after_ms:.1f} ms p50",
            "-",
            f"{after_ms / 30:.2f}x target",
            "< 30 ms",
            yes(after_ms < 30),
        ),
        Row(
            "timeline page, the first draw with nothing kept (a restarted server)",
            f"{cold_ms:.1f} ms p50",
            "-",
            f"{cold_ms / 30:.2f}x target",
            "< 30 ms",
            yes(cold_ms < 30),
        ),
    ]


def serve_rows(folder: Path, count: int, refreshes: int) -> list[Row]:
    """`tapeview serve` over the many tapes with an empty database: its first page, then the session
    index as its live refresh asks for it, while the indexer runs."""
    import requests

    from tests.servers import environment, own_database, tapeview_serve

    temp = tempfile.TemporaryDirectory(prefix="tapeview-bench-serve-", ignore_cleanup_errors=True)
    home = Path(temp.name)
    env = environment(home, f"many=bub:{folder / 'many'}")
    started = time.monotonic()
    with temp, own_database(env, "tapeview_bench_serve") as env, tapeview_serve(env, home) as (base, link, _):
        browser = requests.Session()
        browser.get(link, timeout=60).raise_for_status()
        page = browser.get(f"{base}/", timeout=60)
        first = time.monotonic() - started
        page.raise_for_status()
        times, behind = [], 0
        for _ in range(refreshes):
            time.sleep(SESSION_INDEX_PAUSE)
            seconds, rows = timed(lambda: browser.get(f"{base}/", headers={"HX-Request": "true"}, timeout=60))
            rows.raise_for_status()
            times.append(seconds * 1000)
            behind += "indexing:" in browser.get(f"{base}/", timeout=60).text
    p50, worst = statistics.median(times), max(times)
    return [
        Row(
            f"tapeview serve over {count:,} tapes, empty database, until the first page answers",
            f"{first:.2f} s",
            "-",
            f"{first / 5:.2f}x target",
            "< 5 s",
            yes(first < 5),
        ),
        Row(
            f"session index refresh: {len(times)} requests, {SESSION_INDEX_PAUSE:g} s apart, "
            f"{behind} while indexing",
            f"p50 {p50:.0f} ms, max {worst:.0f} ms",
            "-",
            f"max {worst / p50:.1f}x p50",
            "no request pays for a scan",
            # A scan of every tape costs far more than a page: a request 10x the median paid for one.
            yes(worst < 10 * p50),
        ),
    ]


@contextmanager
def appending(path: Path) -> Iterator[Callable[[], int]]:
    """A function that appends the tape's last 100 entries again (ids continued) and says how many;
    the file is cut back to its size after, so the corpus stays as its manifest says."""
    import orjson

    size = path.stat().st_size
    with path.open("rb") as f:
        f.seek(max(0, size - 2_000_000))
        last = [orjson.loads(line) for line in f.read().splitlines()[1:]][-100:]
    next_id = last[-1]["id"] + 1

    def append() -> int:
        nonlocal next_id
        lines = b"".join(orjson.dumps(e | {"id": next_id + i}) + b"\n" for i, e in enumerate(last))
        next_id += len(last)
        with path.open("ab") as f:
            f.write(lines)
        return len(last)

    try:
        yield append
    finally:
        os.truncate(path, size)


def incremental_row(tape: Any, append: Callable[[], int], runs: int) -> Row:
    """100 entries appended to the 1M tape and indexed, `runs` times: the median."""
    from tapeview.tapes import index

    times = []
    for _ in range(runs):
        n = append()
        times.append(timed(lambda: index.refresh(tape))[0] * 1000)
    ms = statistics.median(times)
    return Row(
        f"incremental index of {n} appended entries",
        f"{ms:.1f} ms p50, max {max(times):.1f} ms",
        "-",
        f"{ms / 50:.2f}x target",
        "< 50 ms",
        yes(ms < 50),
    )


def peak_row(peak_mb: float, entries: int) -> Row:
    return Row(
        f"peak RSS indexing {entries:,} entries (a process of its own)",
        f"{peak_mb:.0f} MB",
        "-",
        f"{peak_mb / 300:.2f}x target",
        "< 300 MB",
        yes(peak_mb < 300),
    )


def print_table(db: str, manifest: dict, rows: list[Row]) -> None:
    head = Row("figure", "measured", "raw or grep, this run", "ratio", "target", "met?")
    print(f"\n### {db} (corpus scale {manifest['scale']:g}, {manifest['bytes'] / 1e6:,.0f} MB)\n")
    for row in (head, Row(*["---"] * 6), *rows):
        print("| " + " | ".join(vars(row).values()) + " |")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
