"""What the pages of a fleet's central index cost as the fleet grows (docs/fleet.md), on PostgreSQL.

    .venv/bin/python bench/fleet_scale.py [--max 100000] [--hosts 100] [--runs 5]

Runs itself under a throwaway PostgreSQL server (.ci/postgres_server.py) unless TAPEVIEW_DATABASE_URL
names one (a database of its own there, bench/harness.py; `sqlite` runs on SQLite). Grows the tape
table and the rows a real index keeps beside each tape (its search progress, an anchor) with
set-based SQL to 10,000 tapes, then 100,000, ... up to --max, over --hosts hosts; at each size
times the queries the pages and the watcher ask, and the pages themselves through Django's test
client as host 0, and prints the median of --runs calls and the ratio of the largest size to 10,000.
"""

from __future__ import annotations

import argparse
import atexit
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.harness import median_ms, start_django, viewer_client  # noqa: E402

KINDS = ("bub", "nanobot", "yachiyo", "araliya")
HOST = "host-000"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=100_000, help="tapes at the largest size")
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5, help="calls timed per query and page (median)")
    parser.add_argument("--first", type=int, default=10_000, help="tapes at the first size (the reference)")
    parser.add_argument("--db", choices=("postgresql", "sqlite"), default="postgresql")
    args = parser.parse_args()
    url = os.environ.get("TAPEVIEW_DATABASE_URL") or ""
    if args.db == "postgresql" and not url.startswith("postgres"):
        server = [sys.executable, str(HERE.parent / ".ci" / "postgres_server.py"), "--"]
        return subprocess.run([*server, sys.executable, __file__, *sys.argv[1:]]).returncode
    if args.db == "sqlite":
        os.environ.pop("TAPEVIEW_DATABASE_URL", None)
    os.environ["TAPEVIEW_HOST"] = HOST
    empty = Path(tempfile.mkdtemp(prefix="tapeview-fleet-scale-"))
    atexit.register(shutil.rmtree, empty, ignore_errors=True)
    os.environ["TAPEVIEW_SOURCES"] = f"{HOST}-s0=bub:{empty}"  # this host's source: no files
    # A fleet's web tier (`serve --no-index`): pages only read, or they would drop host 0's rows.
    os.environ["TAPEVIEW_WEB_INDEXES"] = "false"
    start_django()
    sizes = [args.first]
    while sizes[-1] * 10 <= args.max:
        sizes.append(sizes[-1] * 10)
    if sizes[-1] != args.max and args.max > args.first:
        sizes.append(args.max)
    client = viewer_client()
    table: dict[str, dict[int, float]] = {}
    grown = 0
    for size in sizes:
        grow(grown, size, args.hosts, args.first)
        grown = size
        print(f"{size:,} tapes over {args.hosts} hosts", flush=True)
        for label, fn in checks(client).items():
            fn()  # warm: templates, plans, caches
            ms, _ = median_ms(fn, args.runs)
            table.setdefault(label, {})[size] = ms
            print(f"  {label}: {ms:.1f} ms", flush=True)
    print_table(table, sizes, args.db)
    return 0


def grow(start: int, stop: int, hosts: int, first: int) -> None:
    """Tapes start+1..stop: host g % hosts (host 0's only up to `first`), two sources a host,
    kinds in turn, one in a hundred never active (last_at NULL), labels repeating (ties); each
    with its search progress (one in 47 behind by ten entries) and an anchor.
    Then the statistics renewed, as autovacuum would."""
    from django.db import connection

    from tapeview.search.models import SearchedTape
    from tapeview.tapes.models import Anchor, Tape

    pg = connection.vendor == "postgresql"
    series = f"generate_series({start + 1}, {stop})"
    if not pg:
        counted = f"SELECT {start + 1} UNION ALL SELECT g + 1 FROM s WHERE g < {stop}"
        series = f"(WITH RECURSIVE s(g) AS ({counted}) SELECT g FROM s)"
    # Host 0 (this one) keeps the tapes it has at the first size: the others' grow with the fleet
    # (with one host, it holds them all).
    other = f"'host-' || {_pad(f'(g / {hosts}) % {hosts - 1} + 1', pg)}"
    own = f"'host-' || {_pad(f'g % {hosts}', pg)}"
    host = f"(CASE WHEN g % {hosts} = 0 AND g > {first} THEN {other} ELSE {own} END)" if hosts > 1 else own
    special = {
        "key": "'k' || g",
        "host": host,
        "source": f"{host} || '-s' || (g / {hosts}) % 2",
        "kind": "CASE g % 4 " + " ".join(f"WHEN {i} THEN '{k}'" for i, k in enumerate(KINDS)) + " END",
        "rel": "'t' || g || '.jsonl'",
        "path": "'/nowhere/t' || g || '.jsonl'",
        "name": "'t' || g || '.jsonl'",
        "label": "'session ' || (g % 5000)",
        "role": "'tape'",
        "entries": "g % 300",
        "next_pos": "g % 300 + 1",
        "errors": "g % 7 / 6",
        "tokens": "g * 11 % 100000",
        "first_at": _at("g", pg, "- 3600"),
        "last_at": f"CASE WHEN g % 100 = 0 THEN NULL ELSE {_at('g', pg, '')} END",
        "indexed_at": _at("g", pg, ""),
    }
    columns, values = [], []
    for field in Tape._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(field.column)
        if field.column in special:
            values.append(special[field.column])
        elif field.null:
            values.append("NULL")
        elif field.get_internal_type() == "JSONField":
            values.append("'{}'")
        else:
            values.append(_literal(field.get_default()))
    table = Tape._meta.db_table
    with connection.cursor() as cursor:
        frm = f"FROM {series} AS g" if pg else f"FROM {series}"
        cursor.execute(f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(values)} {frm}")
        ids = f"SELECT id, next_pos, CAST(key AS TEXT) AS key FROM {table} WHERE id > {_max_id_before(start)}"
        cursor.execute(
            f"INSERT INTO {SearchedTape._meta.db_table} "
            f"(tape_id, {connection.ops.quote_name('offset')}, next_pos) "
            f"SELECT id, 0, CASE WHEN id % 47 = 0 THEN next_pos - 10 ELSE next_pos END FROM ({ids}) AS n"
        )
        cursor.execute(
            f"INSERT INTO {Anchor._meta.db_table} (tape_id, pos, name, phase, state, entries,"
            " tool_calls, errors, model, roles, phase_index)"
            " SELECT id, 1, 'session/start', TRUE, '', next_pos - 1, 0, 0, '', '{}', 1"
            f" FROM ({ids}) AS n"
        )
        cursor.execute("ANALYZE")


def _max_id_before(start: int) -> int:
    from tapeview.tapes.models import Tape

    return Tape.objects.order_by("id").values_list("id", flat=True)[start - 1] if start else 0


def _pad(expr: str, pg: bool) -> str:
    return f"lpad(CAST({expr} AS TEXT), 3, '0')" if pg else f"substr('000' || ({expr}), -3)"


def _at(g: str, pg: bool, shift: str) -> str:
    """A time in the last 100 days, spread over the tapes (some share a second: ties)."""
    seconds = f"(CAST({g} AS BIGINT) * 7919 % 8640000) {shift}"
    if pg:
        return f"TIMESTAMPTZ '2026-12-01 00:00:00+00' - make_interval(secs => {seconds})"
    return f"strftime('%Y-%m-%d %H:%M:%S', '2026-12-01', '-' || {seconds} || ' seconds')"


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def checks(client: Any) -> dict[str, Callable[[], object]]:
    """The queries the pages and the watcher ask, then the pages, each as one call."""
    from tapeview.search import catchup
    from tapeview.tapes import listing
    from tapeview.tapes.forms import TapeListForm
    from tapeview.tapes.models import Tape

    def page(url: str) -> Callable[[], object]:
        def get() -> object:
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code, response.content[:300])
            return response

        return get

    def next_page() -> object:
        """The second page as the first one's "next" link asks for it (its cursor)."""
        first = client.get("/").content.decode()
        found = re.search(r'href="\?(after=[^"]+)"', first)
        return page("/?" + html.unescape(found.group(1)) if found else "/?page=2")

    form = TapeListForm({})
    form.is_valid()
    return {
        "search lag of this host's tapes (watcher)": lambda: list(catchup.behind()),
        "session index first page (query)": lambda: list(listing.tapes().order_by(*form.ordering())[:50]),
        # As the index's header counts them (a plain COUNT where listing has no bounded one).
        "sessions total": getattr(listing, "sessions_total", Tape.objects.filter(owner__isnull=True).count),
        "kinds held": listing.kinds_held,
        "hosts": listing.hosts,
        "search behind sum": catchup.lag,
        "other hosts' sources (Sources page)": lambda: list(listing.sources_elsewhere()),
        "page: session index": page("/"),
        "page: session index, live refresh (htmx)": lambda: client.get(
            "/", HTTP_HX_REQUEST="true", HTTP_HX_TRIGGER="rows"
        ),
        "page: session index, one host": page(f"/?host={HOST}"),
        "page: session index, page 3 (by number)": page("/?page=3"),
        "page: session index, next page (keyset)": next_page(),
        "page: Sources": page("/sources/"),
        "API: /api/tapes": page("/api/tapes"),
        "page: search": page("/search/?q=session"),
    }


def print_table(table: dict[str, dict[int, float]], sizes: list[int], db: str) -> None:
    first, last = sizes[0], sizes[-1]
    print(f"\n### {db}: median ms per call, ratio {last:,} / {first:,} tapes (target < 3)\n")
    print("| query or page | " + " | ".join(f"{s:,}" for s in sizes) + " | ratio |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for label, times in table.items():
        cells = " | ".join(f"{times[s]:.1f}" for s in sizes)
        print(f"| {label} | {cells} | {times[last] / max(times[first], 0.01):.2f} |")


if __name__ == "__main__":
    sys.exit(main())
