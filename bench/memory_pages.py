"""Time every page of a Bub memory zone with many versions beside a timeline page of the same tape.

    python bench/memory_pages.py [--versions 500 5000] [--runs 21]

For each count, copies the hand-written zone sample into a throwaway source and adds versions until
the zone has that many: long-term saves that change one line of twenty, a daily note every fifth
version, memory cleared every two hundred, ten minutes apart. All but the last `--written` (50) are
appended in one pass, each zone the very lines a zone write appends; the last go one at a time through
the pages' own write path (`writes.zone_write`: the guest append, the audit row, the index refreshed).
Then prints each memory page's p50 and p99 over `--runs` requests (after a warm-up) beside the
timeline page of the same tape (`?at=` its middle) timed in the same rounds, and the ratio of the
p50s; the target is 3x at most. SQLite, or PostgreSQL
when TAPEVIEW_DATABASE_URL names a server (`.ci/postgres_server.py -- python bench/memory_pages.py`).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench.harness import start_django, timed, viewer_client  # noqa: E402

SAMPLE = HERE.parent / "tests" / "fixtures" / "bub" / "hand_memory_zone.jsonl"
TARGET = 3.0  # a memory page's p50 against the timeline page's


def facts(version: int) -> str:
    """Twenty lines of long-term memory; each save rewrites one of them."""
    return "\n".join(f"- fact {i}: learned at version {version - (version - i) % 20}" for i in range(20))


def change(version: int) -> dict:
    """What version `version` writes: a save, a daily note every fifth, memory cleared every 200th."""
    if version % 200 == 0:
        return {"action": "clear"}
    if version % 5 == 0:
        return {"action": "daily", "text": f"Note written with version {version}."}
    return {"action": "long_term", "text": facts(version)}


def appended(path: Path, upto: int) -> None:
    """Versions up to `upto` appended in one pass, each zone the lines a zone write appends (the
    writer reads the whole file before each append, so written one by one they cost the square of
    the versions: 1,500 took 175 s)."""
    from memory_admin.stores import bub_zone, bub_zone_write
    from tapeview.sources.bub_format import encode

    start = bub_zone.current_zone(path)
    long_term, daily = (start.long_term, dict(start.daily)) if start else ("", {})
    entries = sum(1 for line in path.read_bytes().splitlines() if line.strip())
    when = datetime(2026, 1, 1, tzinfo=UTC)
    chunks = []
    for version in range((start.version if start else 0) + 1, upto + 1):
        step = change(version)
        stamp = (when + timedelta(minutes=10 * version)).isoformat()
        if step["action"] == "clear":
            long_term, daily = "", {}
        elif step["action"] == "long_term":
            long_term = step["text"]
        else:
            day = stamp[:10]
            daily[day] = f"{daily[day]}\n{step['text']}" if day in daily else f"# {day}\n\n{step['text']}"
        lines = bub_zone_write.zone_lines(entries + 1, version, long_term, daily, stamp)
        entries += len(lines)
        chunks.append(encode(lines))
    with path.open("ab") as f:
        f.write(b"".join(chunks))


def build(home: Path, versions: int, actor, written: int) -> tuple:
    """A zone of `versions` versions, the last `written` written one at a time as an operator's page
    writes them (`writes.zone_write`: the guest append, the audit row, the index refreshed)."""
    from django.conf import settings

    from memory_admin import catalog, writes
    from memory_admin import versions as versions_of
    from memory_admin.models import MemoryStore
    from tapeview.tapes import discovery

    folder = home / f"zone-{versions}"
    folder.mkdir()
    shutil.copy(SAMPLE, folder / "session.jsonl")
    appended(folder / "session.jsonl", versions - written)
    settings.TAPEVIEW_SOURCES = f"bench{versions}=bub:{folder}"
    discovery.sync()
    catalog.sync_stores()
    store = MemoryStore.objects.get(kind="bub.zone", source=f"bench{versions}")
    snap = versions_of.snapshot(store)
    while int(snap.version) < versions:
        params = change(int(snap.version) + 1)
        snap = writes.zone_write(store, actor, params.pop("action"), snap.version, **params)
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
    parser.add_argument("--written", type=int, default=50, help="versions written one by one at the end")
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
        build_s, (store, tape) = timed(
            lambda versions=versions: build(home, versions, Actor.of(operator), args.written)
        )
        tape.refresh_from_db()
        size = f"{tape.entries:,} entries, {tape.size / 1e6:.1f} MB"
        print(f"\n{versions:,} versions ({size}), written in {build_s:.0f} s")
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
