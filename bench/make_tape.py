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
SECONDS_PER_ENTRY = 12  # pauses included


def write_tape(out: Path, entries: int, seed: str = "bench", end: datetime | None = None) -> int:
    """Write a tape of `entries` entries (8 handoffs at any size) ending around `end` (now); its bytes."""
    handoff_every = max(5, entries // ENTRIES_PER_TURN // HANDOFFS)
    end = end or datetime.now(UTC)
    start = (end - timedelta(seconds=SECONDS_PER_ENTRY * entries)).replace(microsecond=0)
    turns = bub_turns(random.Random(seed), 1, start, handoff_every=handoff_every)
    out.parent.mkdir(parents=True, exist_ok=True)
    # Streamed: the last turn is cut wherever N falls, like a tape caught mid-merge.
    with open(out, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as f:
        f.writelines(bub_line(entry) for entry in itertools.islice(turns, entries))
    return out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path, help="the .jsonl file to write")
    parser.add_argument("--entries", type=int, default=200_000, help="how many entries (default 200000)")
    parser.add_argument("--seed", default="bench", help="seed of the random session")
    args = parser.parse_args(argv)
    if args.entries < 1:
        parser.error("--entries must be at least 1")
    size = write_tape(args.out, args.entries, args.seed)
    print(f"{args.out}: {args.entries} entries, {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
