"""Time every page of a Bub memory zone with many versions beside a timeline page of the same tape.

    python bench/memory_pages.py [--versions 500 5000] [--runs 21]

For each count, copies the hand-written zone sample into a throwaway source and writes versions onto
it through the pages' own write path (`writes.zone_write`: the guest append, the audit row, the index
refreshed) until the zone has that many: long-term saves that change one line of twenty, a daily note
every fifth version, memory cleared every two hundred. Then prints each memory page's p50 and p99 over
`--runs` requests (after a warm-up) beside the timeline page of the same tape (`?at=` its middle)
timed in the same rounds, and the ratio of the p50s; the target is 3x at most. SQLite, or PostgreSQL
when TAPEVIEW_DATABASE_URL names a server (`.ci/postgres_server.py -- python bench/memory_pages.py`).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.harness import start_django, timed, viewer_client  # noqa: E402

SAMPLE = HERE.parent / "tests" / "fixtures" / "bub" / "hand_memory_zone.jsonl"
TARGET = 3.0  # a memory page's p50 against the timeline page's


def facts(version: int) -> str:
    """Twenty lines of long-term memory; each save rewrites one of them."""
    return "\n".join(f"- fact {i}: learned at version {version - (version - i) % 20}" for i in range(20))


def build(home: Path, versions: int, actor) -> tuple:
    """A zone of `versions` versions, written one at a time as an operator's page writes them."""
    from django.conf import settings

    from memory_admin import catalog, writes
    from memory_admin import versions as versions_of
    from memory_admin.models import MemoryStore
    from tapeview.tapes import discovery

    folder = home / f"zone-{versions}"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "session.jsonl")
    settings.TAPEVIEW_SOURCES = f"bench{versions}=bub:{folder}"
    discovery.sync()
    catalog.sync_stores()
    store = MemoryStore.objects.get(kind="bub.zone", source=f"bench{versions}")
    snap = versions_of.snapshot(store)
    while int(snap.version) < versions:
        v = int(snap.version) + 1
        if v % 200 == 0:
            params = {"action": "clear"}
        elif v % 5 == 0:
            params = {"action": "daily", "text": f"Note written with version {v}."}
        else:
            params = {"action": "long_term", "text": facts(v)}
        action = params.pop("action")
        snap = writes.zone_write(store, actor, action, snap.version, **params)
    store.refresh_from_db()
    return store, store.tape


def percentile(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def pages(store, tape) -> dict[str, str]:
    """Every memory page of the store, at its newest and deep in its history."""
    from memory_admin import zones

    found = zones.seals(zones.holder_of(tape))
    middle = found[len(found) // 2]
    base = f"/memory/{store.key}"
    return {
        "store page": f"{base}/",
        "store page, older versions": f"{base}/?before={middle.pos}",
        "diff, newest": f"{base}/diff",
        "diff, deep in history": f"{base}/diff?to={middle.version}",
        "blame": f"{base}/blame",
        "as of a seal deep in history": f"{base}/?tape={tape.key}&pos={middle.pos}",
        "as of a time deep in history": f"{base}/?as_of={middle.date:%Y-%m-%dT%H:%M:%S}",
    }


def measure(client, urls: dict[str, str], timeline: str, runs: int) -> dict[str, list[float]]:
    """Milliseconds of each page over `runs` rounds; a round requests every page once, the timeline
    first, so a slow moment of the machine falls on all of them alike."""
    everything = {"timeline": timeline, **urls}
    for url in everything.values():
        response = client.get(url)  # warm-up: templates compiled, caches filled
        assert response.status_code == 200, (url, response.status_code)
    times: dict[str, list[float]] = {name: [] for name in everything}
    for _ in range(runs):
        for name, url in everything.items():
            seconds, response = timed(lambda url=url: client.get(url))
            assert response.status_code == 200, (url, response.status_code)
            times[name].append(seconds * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    home = start_django()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.db import connection

    from tapeview.accounts.audit import Actor
    from tapeview.accounts.roles import set_role

    settings.TAPEVIEW_QUIET_SECONDS = 0  # the bench is the only writer: no agent turn to wait out
    settings.TAPEVIEW_REFRESH_SECONDS = 3600  # pages read the index the writes kept up to date
    operator, _ = User.objects.get_or_create(username="bench-operator")
    set_role(operator, "operator")
    client = viewer_client()
    print(f"database: {connection.vendor}", flush=True)
    worst = 0.0
    for versions in args.versions:
        build_s, (store, tape) = timed(lambda versions=versions: build(home, versions, Actor.of(operator)))
        tape.refresh_from_db()
        print(f"\n{versions:,} versions ({tape.entries:,} entries, {tape.size / 1e6:.1f} MB), written in {build_s:.0f} s")
        times = measure(client, pages(store, tape), f"/tapes/{tape.key}/?at={tape.entries // 2}", args.runs)
        reference = statistics.median(times["timeline"])
        print(f"  {'page':<32} {'p50 ms':>8} {'p99 ms':>8} {'p50 / timeline':>15}")
        for name, ms in times.items():
            ratio = statistics.median(ms) / reference
            if name != "timeline":
                worst = max(worst, ratio)
            print(f"  {name:<32} {statistics.median(ms):8.1f} {percentile(ms, 0.99):8.1f} {ratio:14.2f}x")
    print(f"\nworst memory page: {worst:.2f}x the timeline page (target <= {TARGET:.0f}x)")


if __name__ == "__main__":
    main()
