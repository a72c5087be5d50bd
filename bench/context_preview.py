"""Time the context preview page at the last and a middle anchor of a generated Bub tape.

    python bench/context_preview.py [--entries 100000] [--runs 7] [--keep]
    python bench/context_preview.py --entries 1000000 --keep     # the size of the issue "Scale"

Writes a tape with bench/make_tape.py (8 handoffs: the last anchor has ~1/9 of the tape after it,
the middle one about half), indexes it in a throwaway TAPEVIEW_HOME (SQLite, unless
TAPEVIEW_DATABASE_URL names a PostgreSQL server: then a database of its own there), then times
GET /tapes/{key}/context?anchor=<pos> (its first page and its last, `&end=1`) signed in as a
viewer, and prints the median of --runs calls and the HTML size. For reference it times the raw
limit of reading that context whole: reading every line after the anchor and `orjson.loads` of
each, and prints page / raw.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import suppress
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.analysis_api import make_tape  # noqa: E402
from bench.harness import median_ms, raw_parse, start_django, viewer_client  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000, help="entries of the tape (default 100000)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the generated tape in bench/out/")
    args = parser.parse_args()

    start_django()
    from django.conf import settings

    from tapeview.sources import parse_sources
    from tapeview.tapes import discovery, rows
    from tapeview.tapes.models import Anchor, Tape

    settings.TAPEVIEW_REFRESH_SECONDS = 3600  # indexed below: no request looks at the folder again
    client = viewer_client()

    n = args.entries
    tape_file = make_tape(n)
    start = time.perf_counter()
    discovery.sync(parse_sources([f"bench{n}=bub:{tape_file.parent}"]))
    index_s = time.perf_counter() - start
    print(f"{n:,} entries, {tape_file.stat().st_size / 1e6:,.0f} MB, indexed in {index_s:.1f} s")
    tape = Tape.objects.get(source=f"bench{n}")
    anchors = list(Anchor.objects.filter(tape=tape).order_by("pos"))
    chosen = {"last": anchors[-1], "middle": anchors[len(anchors) // 2]}
    head = ("anchor", "pos", "after", "page", "p50 ms", "HTML KB", "raw ms", "page/raw")
    print("{:<8}{:>9}{:>10}  {:<6}{:>8}{:>9}{:>8}{:>9}".format(*head))
    for label, anchor in chosen.items():
        first = rows.at(tape, anchor.pos + 1)
        raw = round(raw_parse(tape_file, first.offset)[0] * 1000) if first else 0
        for page, query in (("first", ""), ("last", "&end=1")):
            url = f"/tapes/{tape.key}/context?anchor={anchor.pos}{query}"
            client.get(url)  # warm up: templates, the page cache of the file
            median, response = median_ms(lambda url=url: client.get(url), args.runs)
            assert response.status_code == 200, response.content[:300]
            size = len(response.content) / 1024
            ratio = f"{median / raw:.3f}" if raw else "–"
            after = tape.next_pos - 1 - anchor.pos
            row = (label, anchor.pos, after, page, median, size, raw, ratio)
            print("{:<8}{:>9,}{:>10,}  {:<6}{:>8.1f}{:>9.1f}{:>8}{:>9}".format(*row))
    if not args.keep:
        tape_file.unlink()
        with suppress(OSError):
            tape_file.parent.rmdir()


if __name__ == "__main__":
    main()
