"""Time a `/metrics` scrape over an index of many tapes: its gauges are read from the database each time.

    python bench/metrics_scrape.py [--tapes 20000] [--sources 20] [--hosts 4] [--runs 7]

Makes --tapes tape rows (no files: the gauges read the index's per-tape columns only), spread
over --sources sources on --hosts hosts, with a size seen for each and a heartbeat per host, in
a throwaway TAPEVIEW_HOME (SQLite, unless TAPEVIEW_DATABASE_URL names a PostgreSQL server), then
prints the median of --runs GET /metrics from 127.0.0.1 and the size of the answer.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.harness import median_ms, start_django  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tapes", type=int, default=20_000)
    parser.add_argument("--sources", type=int, default=20)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    start_django()
    from django.test import Client
    from django.utils import timezone

    from tapeview.tapes.models import Indexer, SourceSize, Tape

    now = timezone.now()
    Tape.objects.bulk_create(
        (
            Tape(
                key=f"t{i}",
                host=f"host{i % args.hosts}",
                source=f"source{i % args.sources}",
                kind="bub",
                rel=f"{i}.jsonl",
                path=f"/agents/{i}.jsonl",
                name=str(i),
                label=str(i),
                size=100_000,
                indexed_offset=100_000,
                next_pos=500,
            )
            for i in range(args.tapes)
        ),
        batch_size=2000,
    )
    SourceSize.objects.bulk_create(
        SourceSize(host=f"host{h}", source=f"source{s}", files=1, total_bytes=10**8, seen_at=now)
        for h in range(args.hosts)
        for s in range(args.sources)
    )
    Indexer.objects.bulk_create(
        Indexer(host=f"host{h}", started_at=now, beat_at=now) for h in range(args.hosts)
    )

    client = Client(HTTP_HOST="127.0.0.1")
    ms, answer = median_ms(lambda: client.get("/metrics"), args.runs)
    assert answer.status_code == 200, answer.content[:300]
    print(
        f"{args.tapes:,} tapes, {args.sources} sources on {args.hosts} hosts: GET /metrics "
        f"median {ms:.1f} ms over {args.runs} runs, {len(answer.content):,} bytes"
    )


if __name__ == "__main__":
    main()
