"""Index a large generated Bub tape and print our rates next to the raw limit (plain orjson parsing).

    python bench/index_rate.py [--entries N] [--keep]

Runs in a throwaway TAPEVIEW_HOME (SQLite) unless TAPEVIEW_DATABASE_URL is set.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def raw_parse(path: Path) -> int:
    """The raw limit: read the lines and parse each with orjson, nothing else."""
    n = 0
    with open(path, "rb") as f:
        for line in f:
            orjson.loads(line)
            n += 1
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--keep", action="store_true", help="keep the generated tape in bench/out/")
    args = parser.parse_args()

    out = HERE / "out"
    out.mkdir(exist_ok=True)
    tapes = out / f"tapes-{args.entries}"
    tapes.mkdir(exist_ok=True)
    tape = tapes / "0123456789abcdef__fedcba9876543210.jsonl"
    if not tape.exists():
        subprocess.run(
            [sys.executable, str(HERE / "make_tape.py"), str(tape), "--entries", str(args.entries)],
            check=True,
        )
    size = tape.stat().st_size

    home = tempfile.mkdtemp(prefix="tapeview-bench-")
    os.environ["TAPEVIEW_HOME"] = home
    os.environ["DJANGO_SETTINGS_MODULE"] = "tapeview.settings"
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from tapeview.accounts.roles import set_role
    from tapeview.sources import bub, parse_sources
    from tapeview.tapes import discovery, index
    from tapeview.tapes.models import Tape

    call_command("migrate", verbosity=0)
    raw_s, n = timed(lambda: raw_parse(tape))
    scan_s, _ = timed(lambda: sum(1 for _ in bub.scan(tape)))
    index_s, _ = timed(lambda: discovery.sync(parse_sources([f"bench=bub:{tapes}"])))
    t = Tape.objects.get(source="bench")
    with tape.open("ab") as f:
        f.write(tape.read_bytes().splitlines(keepends=True)[-1])
    append_s, _ = timed(lambda: index.refresh(t))

    from django.contrib.auth.models import User

    user = User.objects.create_user("bench")
    set_role(user, "viewer")
    client = Client()
    client.force_login(user)
    client.get(f"/tapes/{t.key}/", HTTP_HOST="127.0.0.1")  # compile the templates once
    page_s, response = timed(lambda: client.get(f"/tapes/{t.key}/?end=1", HTTP_HOST="127.0.0.1"))
    assert response.status_code == 200
    mid_s, _ = timed(lambda: client.get(f"/tapes/{t.key}/?at={n // 2}", HTTP_HOST="127.0.0.1"))

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
