"""Index a large generated Bub tape and print our rates next to the raw limit (plain orjson parsing).

    python bench/index_rate.py [--entries N] [--keep] [--real | --next]

--real: the real sample tests/fixtures/bub/session_realistic.jsonl repeated to N entries, as
bench/corpus.py makes its `real` tape (an anchor every 24 entries), instead of a generated session.
--next: a tape in Bub's next format (CloudEvents lines of the real shapes, bench/make_next_tape.py).

Runs in a throwaway TAPEVIEW_HOME (SQLite) unless TAPEVIEW_DATABASE_URL names a PostgreSQL server:
a database of its own there.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench import corpus  # noqa: E402
from bench.harness import raw_parse, start_django, timed, viewer_client  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--keep", action="store_true", help="keep the generated tape in bench/out/")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--real", action="store_true", help="the real sample repeated (bench/corpus.py)")
    kind.add_argument("--next", action="store_true", help="Bub's next format (bench/make_next_tape.py)")
    args = parser.parse_args()

    out = HERE / "out"
    out.mkdir(exist_ok=True)
    tapes = out / f"{'real' if args.real else 'next' if args.next else 'tapes'}-{args.entries}"
    tapes.mkdir(exist_ok=True)
    tape = tapes / "0123456789abcdef__fedcba9876543210.jsonl"
    if args.real:
        if not any(tapes.glob("*.jsonl")):
            corpus.write_real(tapes, args.entries)
        tape = next(tapes.glob("*.jsonl"))
    elif not tape.exists():
        maker = "make_next_tape.py" if args.next else "make_tape.py"
        subprocess.run(
            [sys.executable, str(HERE / maker), str(tape), "--entries", str(args.entries)],
            check=True,
        )
    size = tape.stat().st_size

    start_django()
    from tapeview.sources import bub, parse_sources
    from tapeview.tapes import discovery, index
    from tapeview.tapes.models import Tape

    raw_s, n = raw_parse(tape)
    scan_s, _ = timed(lambda: sum(1 for _ in bub.scan(tape)))
    index_s, _ = timed(lambda: discovery.sync(parse_sources([f"bench=bub:{tapes}"])))
    t = Tape.objects.get(source="bench")
    with tape.open("ab") as f:
        f.write(tape.read_bytes().splitlines(keepends=True)[-1])
    append_s, _ = timed(lambda: index.refresh(t))
    os.truncate(tape, size)  # a tape kept stays as it was made

    client = viewer_client()
    client.get(f"/tapes/{t.key}/")  # compile the templates once
    page_s, response = timed(lambda: client.get(f"/tapes/{t.key}/?end=1"))
    assert response.status_code == 200
    mid_s, _ = timed(lambda: client.get(f"/tapes/{t.key}/?at={n // 2}"))

    mb = size / 1e6
    print(f"tape: {n:,} entries, {mb:.1f} MB ({tape})")
    print(f"{'step':<38}{'seconds':>9}{'entries/s':>12}{'MB/s':>9}{'vs raw':>9}")
    for name, secs in (
        ("raw limit: orjson.loads per line", raw_s),
        ("bub.scan (parse + classify)", scan_s),
        ("full index (scan + database rows)", index_s),
    ):
        print(f"{name:<38}{secs:>9.2f}{n / secs:>12,.0f}{mb / secs:>9.1f}{raw_s / secs:>9.2f}")
    print(f"{'append one entry, re-index':<38}{append_s * 1000:>8.1f}ms")
    print(f"{'timeline page at the end':<38}{page_s * 1000:>8.1f}ms")
    print(f"{'timeline page in the middle':<38}{mid_s * 1000:>8.1f}ms")
    print("'vs raw' is our rate divided by the raw limit (1.00 = as fast as parsing alone).")
    if not args.keep:
        tape.unlink()


if __name__ == "__main__":
    main()
