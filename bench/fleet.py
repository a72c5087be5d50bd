"""The figures a fleet estimate rests on (docs/fleet.md), measured on a real PostgreSQL.

    .venv/bin/python bench/fleet.py [--entries 200000] [--runs 20] [--idle-tapes 1000] [--idle-seconds 60]

Runs itself under a throwaway PostgreSQL server (.ci/postgres_server.py, `fsync=off`) unless
TAPEVIEW_DATABASE_URL names one; a database of its own there (bench/harness.py). Measures:

- a watcher's cold index of a generated Bub tape of --entries (bench/make_tape.py) and of the
  real sample repeated to a quarter of that (bench/corpus.py), with file copies off and on, and
  the search pass after it; each against plain `orjson.loads` of the same lines, the same run;
- an append of 100 entries: the index, then the copy (tapes.filecopy.keep);
- database bytes per entry (pg_total_relation_size: table, TOAST and indexes) of the entry chunks,
  the search docs and the file copies, and the copies' compression against lz4 and zstd of the file;
- pages read in-process (Django's test client) as the web tier of another host (from the copies)
  and as the tape's own host (from the file): p50, p95 and database queries per request;
- a handoff through the outbox (a real watcher process) against a direct one;
- an idle watcher over --idle-tapes small tapes: RSS, CPU, transactions and statements per minute.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import corpus, fleet_hosts  # noqa: E402
from bench.harness import raw_parse, start_django, timed, viewer_client  # noqa: E402
from bench.make_tape import write_tape  # noqa: E402

HOST = "bench-host"
TABLES = ("tapeview_entrychunk", "search_doc", "tapeview_fileblock", "tapeview_filecopy", "tapeview_anchor")
rows: list[tuple[str, str, str]] = []  # figure, measured, raw or reference (the same run)


def row(figure: str, measured: str, raw: str = "-") -> None:
    rows.append((figure, measured, raw))
    print(f"  {figure}: {measured}  [{raw}]", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200_000, help="entries of the generated tape")
    parser.add_argument("--runs", type=int, default=20, help="requests timed per page (p50, p95)")
    parser.add_argument("--handoffs", type=int, default=10, help="handoffs timed each way")
    parser.add_argument("--idle-tapes", type=int, default=1000)
    parser.add_argument("--idle-seconds", type=float, default=60)
    args = parser.parse_args()
    if not (os.environ.get("TAPEVIEW_DATABASE_URL") or "").startswith("postgres"):
        server = [sys.executable, str(HERE.parent / ".ci" / "postgres_server.py"), "--"]
        return subprocess.run([*server, sys.executable, __file__, *sys.argv[1:]]).returncode
    os.environ["TAPEVIEW_HOST"] = HOST
    start_django()
    from django.conf import settings
    from django.db import connection

    work = HERE / "out" / f"fleet-{args.entries}"
    tapes = {"generated": generated(work, args.entries), "real": real(work, max(1, args.entries // 4))}
    with connection.cursor() as cursor:
        cursor.execute("SELECT version(), current_setting('default_toast_compression')")
        version, toast = cursor.fetchone()
    print(f"{version.split(',')[0]}; {os.cpu_count()} cores; default_toast_compression={toast}")
    for n, (name, path) in enumerate(tapes.items()):
        index_rates(name, path, work, list(tapes)[: n + 1])
    appends(work / "copies-generated" / tapes["generated"].name, args.runs // 4 or 1)
    catch_up()  # the appends searchable too: the idle watcher below waits for no lag
    settings.TAPEVIEW_WEB_INDEXES = False  # as `tapeview serve --no-index`: pages never index
    reads(args.runs)
    trip = fleet_hosts.outbox_round_trip(work, args.handoffs)
    row(
        "handoff p50: through the outbox (web tier -> watcher -> 201) / direct",
        f"{trip['p50']['outbox']:.0f} ms / {trip['p50']['direct']:.0f} ms",
        f"answers {trip['statuses']}",
    )
    idle = fleet_hosts.idle_watcher(work, args.idle_tapes, args.idle_seconds)
    row(
        f"idle watcher over {args.idle_tapes:,} tapes (after {idle['ready_s']:.0f} s to index them)",
        f"RSS {idle['rss_mb']:.0f} MB; {idle['cpu_s_per_min']:.2f} CPU s/min; "
        f"{idle['xacts_per_min']:.0f} transactions/min, {idle['statements_per_min']:.0f} statements/min",
        "top statements/min: " + ", ".join(f"{k} {v:.0f}" for k, v in idle["top"]),
    )
    print("\n| figure | measured | raw or reference, same run |\n| --- | --- | --- |")
    for figure, measured, raw in rows:
        print(f"| {figure} | {measured} | {raw} |")
    return 0


def catch_up() -> None:
    """Everything searchable, and in the GIN index (the fresh docs moved: see search.fresh)."""
    from tapeview.search import backends, catchup

    catchup.catch_up()
    backends.current().refine(None)


def generated(work: Path, entries: int) -> Path:
    tape = work / "generated" / "0123456789abcdef__fedcba9876543210.jsonl"
    if not tape.exists():
        tape.parent.mkdir(parents=True, exist_ok=True)
        write_tape(tape, entries, "fleet", corpus.NOW)
    return tape


def real(work: Path, entries: int) -> Path:
    folder = work / "real"
    if not folder.is_dir():
        corpus.write_real(folder, entries)
    return corpus.real_tape(work)


def sizes() -> dict[str, int]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f"pg_total_relation_size('{t}')" for t in TABLES))
        return dict(zip(TABLES, cursor.fetchone(), strict=True))


def mb_s(path: Path, seconds: float) -> str:
    return f"{path.stat().st_size / 1e6 / seconds:.1f} MB/s"


def index_rates(name: str, path: Path, work: Path, copied: list[str]) -> None:
    """The watcher's first pass over one tape, copies off then on (the same bytes, copied into
    a source folder of each), then the search pass; bytes per entry from the tables' growth.
    `copied`: the tapes indexed with copies so far, this one last (a sync drops the sources it is
    not given)."""
    from django.conf import settings

    from tapeview.search import backends, catchup
    from tapeview.sources import parse_sources
    from tapeview.tapes import discovery, signals
    from tapeview.tapes.models import Tape

    # As a watcher's first pass does it: the offset index (and the copy) first, search after.
    signals.entries_indexed.disconnect(dispatch_uid="search.entries_indexed")
    raw_s, n = raw_parse(path)
    raw = f"orjson {n / raw_s:,.0f} entries/s, {mb_s(path, raw_s)}"
    seconds = {}
    for mode in ("plain", "copies"):
        folder = work / f"{mode}-{name}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        shutil.copyfile(path, folder / path.name)  # a file of its own: the appends below grow it
        settings.TAPEVIEW_COPY_FILES = mode == "copies"
        before = sizes()
        specs = [f"copies-{k}=bub:{work / f'copies-{k}'}" for k in copied]
        specs = [*specs[:-1], f"plain-{name}=bub:{folder}"] if mode == "plain" else specs
        seconds[mode], _ = timed(lambda specs=specs: discovery.sync(parse_sources(specs)))
        grown = {t: s - before[t] for t, s in sizes().items()}
        Tape.objects.filter(source__startswith="plain-").delete()
    ratio = seconds["plain"] / seconds["copies"]
    for mode, s in seconds.items():
        switch = "on" if mode == "copies" else "off"
        row(
            f"cold index, {name} {n:,}-entry tape ({path.stat().st_size / 1e6:.0f} MB), copies {switch}",
            f"{n / s:,.0f} entries/s, {mb_s(path, s)}, {raw_s / s:.3f}x raw",
            raw,
        )
    row(f"copies on / off, {name}", f"{ratio:.2f}x the rate ({seconds['copies'] - seconds['plain']:+.2f} s)")
    before = sizes()
    search_s, made = timed(lambda: catchup.catch_up())
    refine_s, _ = timed(lambda: backends.current().refine(None))  # the fresh docs into the GIN index
    searched = sizes()["search_doc"] - before["search_doc"]
    row(
        f"search pass after it, {name}", f"{made / search_s:,.0f} entries/s, {raw_s / search_s:.3f}x raw", raw
    )
    row(f"its docs moved into the GIN index after it, {name}", f"{refine_s:.2f} s")
    storage(name, path, n, grown, searched)


def storage(name: str, path: Path, n: int, grown: dict[str, int], searched: int) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT sum(b.end - b.start), sum(pg_column_size(b.data)), "
            "string_agg(DISTINCT coalesce(pg_column_compression(b.data), 'none'), ',') "
            "FROM tapeview_fileblock b JOIN tapeview_filecopy c ON c.id = b.copy_id WHERE c.path LIKE %s",
            [f"%/copies-{name}/%"],
        )
        raw_bytes, stored, methods = cursor.fetchone()
    codecs = {
        c: len(subprocess.run([c, *flags, "-c", str(path)], capture_output=True, check=True).stdout)
        for c, flags in (("lz4", ["-1"]), ("zstd", ["-3", "-q"]))
        if shutil.which(c)
    }
    size = path.stat().st_size
    chunk, blocks = grown["tapeview_entrychunk"] + grown["tapeview_anchor"], grown["tapeview_fileblock"]
    row(
        f"database bytes per entry, {name} ({size / n:,.0f} file bytes per entry)",
        f"entry chunks + anchors {chunk / n:.1f}; search docs (table + GIN) {searched / n:,.0f}; "
        f"file copies (table + TOAST) {(blocks + grown['tapeview_filecopy']) / n:,.0f}",
        f"the file {size / n:,.0f}",
    )
    row(
        f"file copies' compression, {name} ({methods})",
        f"{raw_bytes / stored:.2f}x (blocks' datums); {size / blocks:.2f}x with the table's pages",
        "; ".join(f"{c} of the whole file {size / b:.2f}x" for c, b in codecs.items()),
    )


def appends(path: Path, runs: int) -> None:
    """100 entries appended to the copied tape: the index's refresh, then the copy's."""
    from django.conf import settings

    from tapeview.tapes import index
    from tapeview.tapes.models import Tape

    tape = Tape.objects.get(source="copies-generated")
    lines = path.read_bytes().rstrip().rsplit(b"\n", 100)[1:]
    took: dict[str, list[float]] = {"index": [], "copy": []}
    for _ in range(runs):
        with path.open("ab") as f:
            f.write(b"\n".join(lines) + b"\n")  # the same 100 turns again: what counts is their bytes
        for step, copies in (("index", False), ("copy", True)):
            settings.TAPEVIEW_COPY_FILES = copies
            took[step].append(timed(lambda: index.refresh(tape))[0] * 1000)
    index_ms, copy_ms = (statistics.median(took[k]) for k in ("index", "copy"))
    row(
        f"append of 100 entries ({sum(map(len, lines)) / 1e3:.0f} KB), copies on, p50 of {runs}",
        f"{index_ms + copy_ms:.1f} ms: index {index_ms:.1f} ms + copy {copy_ms:.1f} ms",
    )


def reads(runs: int) -> None:
    """The same tape's pages as another host's web tier (its copy) and as its own host (its file)."""
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tapeview.tapes.models import Tape

    client = viewer_client()
    tape = Tape.objects.get(source="copies-generated")
    pages = {
        "API entries?limit=50 (first page)": f"/api/tapes/{tape.key}/entries?limit=50",
        "API entries?limit=50 (middle)": f"/api/tapes/{tape.key}/entries?limit=50&after={tape.entries // 2}",
        "timeline page (end)": f"/tapes/{tape.key}/?end=1",
        "timeline page (middle)": f"/tapes/{tape.key}/?at={tape.entries // 2}",
    }
    for label, url in pages.items():
        found = {}
        for where, host in (("copies", "web"), ("file", HOST)):
            settings.TAPEVIEW_HOST = host
            assert client.get(url).status_code == 200, (url, host)  # warm: templates, caches
            times = []
            for _ in range(runs):
                with CaptureQueriesContext(connection) as queries:
                    seconds, r = timed(lambda url=url: client.get(url))
                assert r.status_code == 200, (url, r.content[:300])
                times.append(seconds * 1000)
            times.sort()
            p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
            found[where] = f"p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms, {len(queries)} queries"
        settings.TAPEVIEW_HOST = HOST
        row(f"{label}, from the copies (another host)", found["copies"], f"from the file: {found['file']}")


if __name__ == "__main__":
    sys.exit(main())
