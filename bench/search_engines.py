"""The full-text catch-up on the real tape: the pass as it runs, our own reading, each engine's inserts.

    python bench/search_engines.py [--scale S | --corpus DIR] [--runs N]

The search pass's target is >= 0.1x the raw limit; a dedicated engine is measured beside the
database's own full-text search. Every row is against `orjson.loads` of each line of
the same tape in this run (bench/harness.py `raw_parse`):

- the pass: `catchup.catch_up()` over the tape indexed without its docs, in the database the bench
  runs on (SQLite, or PostgreSQL under `.ci/postgres_server.py`), its docs dropped before each run;
  the best of `--runs` shown (the machine is shared);
- reading: the pass's own work without a database (`catchup.entry_rows` over the lane's docs:
  parse, searchable text, tags), the floor of any engine fed from Python, and the same over an
  Entry per line (the way the lane leaves to unusual lines and other agents' tapes);
- each engine, the same docs inserted in batches of `catchup.BATCH`, each committed:
  - SQLite FTS5 as Tapeview makes it (`search_doc`'s table and its `hashsize`), in a file of its own,
    checkpointed as the pass does;
  - FTS5 with `detail=none` and no content: the cheapest FTS5 table (no phrases, no snippets);
  - tantivy (tantivy-py, one writer thread), when installed (`pip install tantivy`; not a
    dependency of Tapeview: this benchmark is the reason to look at it).

The last column is what the pass would reach with that engine: raw / (reading + engine).
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import corpus  # noqa: E402
from bench.harness import raw_parse, start_django  # noqa: E402

FTS5 = "CREATE VIRTUAL TABLE docs USING fts5(body, tags, tokenize = 'unicode61 remove_diacritics 2')"
FTS5_FLOOR = (
    "CREATE VIRTUAL TABLE docs USING fts5(body, tags, tokenize = 'unicode61 remove_diacritics 2', "
    "detail = none, content = '')"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--corpus", type=Path, help="the corpus folder (default bench/out/corpus-<scale>)")
    parser.add_argument("--runs", type=int, default=2, help="runs of the pass (default 2)")
    args = parser.parse_args()
    folder = args.corpus or HERE / "out" / f"corpus-{args.scale:g}"
    corpus.ensure(folder, args.scale)
    real = corpus.real_tape(folder)
    start_django()

    raw, n = raw_parse(real)
    passes = pass_seconds(real, args.runs)
    reading, docs = timed(lambda: read_docs(real))
    by_entry, _ = timed(lambda: read_docs(real, by_entry=True))
    text_mb = sum(len(body.encode()) for _, body, _ in docs) / 1e6
    size_mb = real.stat().st_size / 1e6
    print(f"real tape: {n:,} entries, {size_mb:.0f} MB; {text_mb:.0f} MB of searchable text")
    print(f"{'step':<44}{'seconds':>9}{'docs/s':>11}{'vs raw':>9}{'pass vs raw':>13}")
    row("raw limit: orjson.loads per line", raw, n, raw)
    for mode, seconds in passes.items():
        row(mode, seconds, n, raw, raw / seconds)
    row("reading: catchup.entry_rows, no database", reading, n, raw)
    row("reading the Entry way: an Entry per line", by_entry, n, raw)
    engines: list[tuple[str, Callable[[list[tuple]], None]]] = [
        ("SQLite FTS5, as Tapeview makes it", lambda d: sqlite_inserts(FTS5, d)),
        ("SQLite FTS5 floor: detail=none, no content", lambda d: sqlite_inserts(FTS5_FLOOR, d)),
    ]
    try:
        import tantivy  # noqa: F401
    except ImportError:
        left_out = "tantivy is not installed (pip install tantivy): its row is left out."
    else:
        left_out = ""
        engines.append(("tantivy, one writer thread", tantivy_inserts))
    for name, insert in engines:
        seconds, _ = timed(lambda insert=insert: insert(docs))
        row(name, seconds, n, raw, raw / (reading + seconds))
    print("'pass vs raw': the pass's rate against raw; for an engine, raw / (reading + engine), what the")
    print("pass would reach with it. The target: >= 0.1x raw.")
    if left_out:
        print(left_out)
    return 0


def row(name: str, seconds: float, n: int, raw: float, whole_pass: float | None = None) -> None:
    last = "" if whole_pass is None else f"{whole_pass:>13.3f}"
    print(f"{name:<44}{seconds:>9.2f}{n / seconds:>11,.0f}{raw / seconds:>9.3f}{last}")


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def read_docs(path: Path, by_entry: bool = False) -> list[tuple[int, str, str]]:
    """The docs the search pass makes of the tape, as (id, body, tags): through its lane, or with an
    Entry made of every line."""
    from tapeview.search import backends, catchup, lane
    from tapeview.sources import reader
    from tapeview.tapes.models import Tape

    tape = Tape(pk=1, source="real", kind="bub", path=str(path))
    catchup._last_system.pop(tape.pk, None)  # the tape's last system prompt: none seen yet
    docs = map(lane.entry_doc, reader("bub").scan(path)) if by_entry else lane.tape_docs("bub", path)
    rows = catchup.entry_rows(backends.SQLite(), tape, docs)
    return [row[:3] for row in rows]


def pass_seconds(path: Path, runs: int) -> dict[str, float]:
    """The best seconds of `runs` search passes over the tape."""
    from django.db import connection

    from tapeview.search import catchup
    from tapeview.sources import parse_sources
    from tapeview.tapes import discovery, signals
    from tapeview.tapes.models import Tape

    # Indexed without its docs, as a cold index leaves a big tape: the pass makes them all.
    signals.entries_indexed.disconnect(dispatch_uid="search.entries_indexed")
    discovery.sync(parse_sources([f"real=bub:{path.parent}"]))
    tape = Tape.objects.get(source="real")
    db = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}.get(connection.vendor, connection.vendor)
    best = float("inf")
    for _ in range(runs):
        catchup.forget_tape(tape.pk)
        seconds, made = timed(catchup.catch_up)
        assert made == tape.next_pos - 1 and not catchup.lag(), made
        best = min(best, seconds)
    return {f"the pass, {db}": best}


def batches(docs: list[tuple]) -> list[list[tuple]]:
    from tapeview.search.catchup import BATCH

    return [docs[i : i + BATCH] for i in range(0, len(docs), BATCH)]


def sqlite_inserts(ddl: str, docs: list[tuple]) -> None:
    # The FTS5 setting and the checkpoints of Tapeview's search pass (search.migrations, search.writes).
    from tapeview.search.writes import WAL_PAGES

    hashsize = importlib.import_module("tapeview.search.migrations.0003_faster_writes").HASHSIZE
    folder = Path(tempfile.mkdtemp(prefix="tapeview-bench-fts-"))
    try:
        db = sqlite3.connect(folder / "fts.sqlite3")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")  # as Tapeview's own connections (settings.py)
        db.execute(f"PRAGMA wal_autocheckpoint = {WAL_PAGES}")  # as the search pass writes
        db.execute(ddl)
        db.execute("INSERT INTO docs (docs, rank) VALUES ('hashsize', ?)", [hashsize])  # as migrated
        for batch in batches(docs):
            db.executemany("INSERT INTO docs (rowid, body, tags) VALUES (?, ?, ?)", batch)
            db.commit()
        db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        db.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def tantivy_inserts(docs: list[tuple]) -> None:
    import tantivy

    schema = tantivy.SchemaBuilder()
    schema.add_integer_field("id", stored=True, indexed=True, fast=True)
    schema.add_text_field("body", stored=True)  # stored, as FTS5 keeps the body for snippets
    schema.add_text_field("tags")
    folder = Path(tempfile.mkdtemp(prefix="tapeview-bench-tantivy-"))
    try:
        index = tantivy.Index(schema.build(), path=str(folder))
        writer = index.writer(heap_size=200_000_000, num_threads=1)
        for batch in batches(docs):
            for doc_id, body, tags in batch:
                writer.add_document(tantivy.Document(id=doc_id, body=body, tags=tags))
            writer.commit()
        writer.wait_merging_threads()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
