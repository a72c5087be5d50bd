"""Time the phase and budget endpoints on large generated Bub tapes: they stay flat as the tape grows.

    python bench/analysis_api.py [--entries 20000 200000] [--runs 5] [--keep]

For each size, writes a tape with bench/make_tape.py (8 handoffs, so ~10 phases at any size),
indexes it in a throwaway TAPEVIEW_HOME (SQLite, unless TAPEVIEW_DATABASE_URL names a PostgreSQL
server: then a database of its own there), then times
GET /api/tapes/{id}/phases (the index's Anchor rows only: O(phases)) and GET /api/tapes/{id}/budget
(the tokens the index keeps, plus a bounded read of at most the newest 2,000 entries after the last
anchor for the suggested handoff point), and prints the median and worst of --runs calls in ms.
It times /budget again as if the agent had reported no usage since its last anchor: the estimate
then reads at most the newest 2,000 entries (4 MB) and counts them with the BPE tokenizer. The
first estimate of a process loads the tokenizer (~1.5 s): it is warmed up before timing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.harness import start_django  # noqa: E402


def make_tape(entries: int) -> Path:
    tapes = HERE / "out" / f"tapes-{entries}"
    tapes.mkdir(parents=True, exist_ok=True)
    tape = tapes / "0123456789abcdef__fedcba9876543210.jsonl"
    if not tape.exists():
        subprocess.run(
            [sys.executable, str(HERE / "make_tape.py"), str(tape), "--entries", str(entries)], check=True
        )
    return tape


def timed_ms(get, url: str, runs: int) -> tuple[float, float, object]:
    times, response = [], None
    for _ in range(runs):
        start = time.perf_counter()
        response = get(url)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.content[:300]
    return statistics.median(times), max(times), response


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, nargs="+", default=[20_000, 200_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="keep the generated tapes in bench/out/")
    args = parser.parse_args()

    start_django()
    from django.conf import settings
    from django.test import Client

    from tapeview.accounts import tokens
    from tapeview.sources import parse_sources
    from tapeview.tapes import discovery
    from tapeview.tapes.models import Tape

    settings.TAPEVIEW_REFRESH_SECONDS = 3600  # indexed below: no request looks at the folder again
    token = tokens.create("bench", "read")[1]
    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {token}")
    print(f"{'entries':>9}{'phases':>8}{'index s':>9}  {'endpoint':<34}{'median ms':>10}{'max ms':>9}")
    for n in args.entries:
        tape_file = make_tape(n)
        start = time.perf_counter()
        discovery.sync(parse_sources([f"bench{n}=bub:{tape_file.parent}"]))
        index_s = time.perf_counter() - start
        tape = Tape.objects.get(source=f"bench{n}")
        client.get(f"/api/tapes/{tape.key}/budget")  # warm up: templates, tokenizer
        for url in (f"/api/tapes/{tape.key}/phases", f"/api/tapes/{tape.key}/phases?limit=500"):
            median, worst, response = timed_ms(client.get, url, args.runs)
            phases, endpoint = len(response.json()["items"]), url.split(tape.key)[1]
            print(f"{n:>9,}{phases:>8}{index_s:>9.1f}  {endpoint:<34}{median:>10.1f}{worst:>9.1f}")
        median, worst, response = timed_ms(client.get, f"/api/tapes/{tape.key}/budget", args.runs)
        budget = response.json()
        print(f"{n:>9,}{'':>8}{'':>9}  {'/budget':<34}{median:>10.1f}{worst:>9.1f}")
        print(
            f"{'':>9}  budget: {budget['tokens_since_anchor']:,} tokens ({budget['source']}), window "
            f"{budget['window']}, suggested handoff after entry {budget['suggested_handoff_pos']}"
        )
        # As if the agent had reported nothing since its last anchor: the bounded estimate.
        Tape.objects.filter(pk=tape.pk).update(context_tokens=None)
        client.get(f"/api/tapes/{tape.key}/budget")  # warm up: the tokenizer's tables
        median, worst, response = timed_ms(client.get, f"/api/tapes/{tape.key}/budget", args.runs)
        budget = response.json()
        print(f"{n:>9,}{'':>8}{'':>9}  {'/budget (estimated)':<34}{median:>10.1f}{worst:>9.1f}")
        tokens, capped = budget["tokens_since_anchor"], budget["capped"]
        print(f"{'':>9}  budget: {tokens:,} tokens (estimated, capped: {capped})")
        if not args.keep:
            tape_file.unlink()
            with suppress(OSError):
                tape_file.parent.rmdir()


if __name__ == "__main__":
    main()
