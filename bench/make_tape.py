"""Write one large, realistic Bub tape for benchmarks: python bench/make_tape.py OUT.jsonl --entries N."""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

# Run as a plain script from anywhere, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tapeview.demodata.bub import bub_line, bub_turns  # noqa: E402

HANDOFFS = 8
ENTRIES_PER_TURN = 20  # what bub_turns averages, commands included


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path, help="the .jsonl file to write")
    parser.add_argument("--entries", type=int, default=200_000, help="how many entries (default 200000)")
    parser.add_argument("--seed", default="bench", help="seed of the random session")
    args = parser.parse_args(argv)
    if args.entries < 1:
        parser.error("--entries must be at least 1")
    handoff_every = max(5, args.entries // ENTRIES_PER_TURN // HANDOFFS)
    # Start far enough back that the tape ends around now (~12 s per entry, pauses included).
    start = (datetime.now(UTC) - timedelta(seconds=12 * args.entries)).replace(microsecond=0)
    turns = bub_turns(random.Random(args.seed), 1, start, handoff_every=handoff_every)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # Streamed: the last turn is cut wherever N falls, like a tape caught mid-merge.
    with open(args.out, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as f:
        f.writelines(bub_line(entry) for entry in itertools.islice(turns, args.entries))
    print(f"{args.out}: {args.entries} entries, {args.out.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
