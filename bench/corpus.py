"""Write the scale benchmark's corpus: python bench/corpus.py OUT_DIR [--scale S] [--seed SEED].

At --scale 1, laid out as Tapeview's sources read it:

    OUT_DIR/many/      bub: 10,000 tapes of 20-2,000 entries, log-uniform (many short, few long),
                       ending over the last 365 days
    OUT_DIR/big/       bub: one 1,000,000-entry tape with the real turn pattern (bench/make_tape.py)
    OUT_DIR/real/      bub: 200,000 entries repeating the real sample tests/fixtures/bub/
                       session_realistic.jsonl, ids and dates continued so it stays one valid tape
    OUT_DIR/nanobot/   nanobot: the demo's data dir, its sessions copied to 100 sessions
    OUT_DIR/yachiyo/   yachiyo: the demo's data dir with a 50,000-entry long-term-memory/memory.json

Every count is multiplied by --scale (at least one tape, entry or session of each). An existing
corpus whose manifest.json matches the scale, the seed and every file's size is reused as it is.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import random
import shutil
import sys
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.make_tape import write_tape  # noqa: E402
from tapeview.demodata import nanobot, yachiyo  # noqa: E402
from tapeview.demodata.bub_tape import tape_name  # noqa: E402

FORMAT = 1  # bump when the layout or the generators change: older corpora are rewritten
REAL_SAMPLE = Path(__file__).resolve().parents[1] / "tests/fixtures/bub/session_realistic.jsonl"
PARTS = ("many", "big", "real", "nanobot", "yachiyo")
# Fixed, so the same scale and seed give the same bytes on every run (and every machine).
NOW = datetime(2026, 11, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Sizes:
    tapes: int
    big: int
    real: int
    nanobot: int
    memory: int

    @classmethod
    def at(cls, scale: float) -> Sizes:
        def n(full: int) -> int:
            return max(1, round(full * scale))

        return cls(
            tapes=n(10_000), big=n(1_000_000), real=n(200_000), nanobot=max(4, n(100)), memory=n(50_000)
        )


def sources(out: Path) -> list[str]:
    """The corpus as source specs (`tapeview.sources.parse_sources`)."""
    kinds = {"many": "bub", "big": "bub", "real": "bub", "nanobot": "nanobot", "yachiyo": "yachiyo"}
    return [f"{part}={kinds[part]}:{out / part}" for part in PARTS]


def big_tape(out: Path) -> Path:
    return next((out / "big").glob("*.jsonl"))


def real_tape(out: Path) -> Path:
    return next((out / "real").glob("*.jsonl"))


def ensure(out: Path, scale: float = 1.0, seed: str = "bench") -> dict:
    """The corpus at `out`, written unless a complete one of this scale and seed is there; its manifest."""
    manifest = out / "manifest.json"
    wanted = {"format": FORMAT, "scale": scale, "seed": seed}
    if manifest.exists():
        found = json.loads(manifest.read_text())
        if all(found.get(k) == v for k, v in wanted.items()) and _complete(out, found["files"]):
            stamp(out)
            return found
        manifest.unlink()
    for part in PARTS:
        shutil.rmtree(out / part, ignore_errors=True)
    sizes = Sizes.at(scale)
    rng = random.Random(seed)
    counts = {
        "tapes": write_many(out / "many", sizes.tapes, rng, seed),
        "big": write_big(out / "big", sizes.big, seed),
        "real": write_real(out / "real", sizes.real),
        "nanobot_sessions": write_nanobot(out / "nanobot", sizes.nanobot),
        "memory_entries": write_memory(out / "yachiyo", sizes.memory, rng),
    }
    files = {str(p.relative_to(out)): p.stat().st_size for p in sorted(out.rglob("*")) if p.is_file()}
    found = {**wanted, "counts": counts, "bytes": sum(files.values()), "files": files}
    manifest.write_text(json.dumps(found, indent=1))
    stamp(out)
    return found


def stamp(out: Path) -> None:
    """Each Bub tape's modification time set to its last entry's date, as the agent's last append left
    it (the corpus is written in one go, in no order of date): a cold index numbers tapes by it."""
    for part in ("many", "big", "real"):
        for path in (out / part).glob("*.jsonl"):
            size, tail = path.stat().st_size, 1 << 16
            with open(path, "rb") as f:
                while True:  # a tail long enough to hold the whole last line
                    f.seek(max(0, size - tail))
                    lines = f.read().rstrip(b"\n").rsplit(b"\n", 1)
                    if len(lines) == 2 or tail >= size:
                        break
                    tail *= 4
            when = datetime.fromisoformat(orjson.loads(lines[-1])["date"]).timestamp()
            os.utime(path, (when, when))


def _complete(out: Path, files: dict[str, int]) -> bool:
    return all((out / name).is_file() and (out / name).stat().st_size == size for name, size in files.items())


def write_many(folder: Path, count: int, rng: random.Random, seed: str) -> dict[str, int]:
    """`count` tapes of 20-2,000 entries, log-uniform, each its own session, ending within a year."""
    entries = 0
    for n in range(count):
        size = round(math.exp(rng.uniform(math.log(20), math.log(2000))))
        end = NOW - timedelta(days=rng.uniform(0, 365))
        write_tape(
            folder / f"{tape_name(f'/work/ws{n % 50}', f'session-{n}')}.jsonl", size, f"{seed}/{n}", end
        )
        entries += size
    return {"count": count, "entries": entries}


def write_big(folder: Path, entries: int, seed: str) -> dict[str, int]:
    write_tape(folder / f"{tape_name('/work/big', 'the-long-session')}.jsonl", entries, f"{seed}/big", NOW)
    return {"count": 1, "entries": entries}


def write_real(folder: Path, entries: int) -> dict[str, int]:
    """The real sample repeated: each round continues the ids and starts where the last one ended."""
    sample = [orjson.loads(line) for line in REAL_SAMPLE.read_bytes().splitlines() if line.strip()]
    dates = [datetime.fromisoformat(e["date"]) for e in sample]
    span = dates[-1] - dates[0] + timedelta(seconds=30)
    start = NOW - span * math.ceil(entries / len(sample))
    last_id = max(e["id"] for e in sample)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{tape_name('/work/real', 'the-real-session')}.jsonl", "w", encoding="utf-8") as f:
        for n in range(entries):
            rounds, i = divmod(n, len(sample))
            entry = sample[i] | {"id": sample[i]["id"] + rounds * last_id}
            entry["date"] = (start + (dates[i] - dates[0]) + span * rounds).isoformat()
            # json.dumps as Bub writes it (", " and ": "), not orjson's compact form.
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return {"count": 1, "entries": entries}


def write_nanobot(root: Path, sessions: int) -> dict[str, int]:
    """The demo's data dir, its session files copied under new keys until there are `sessions`."""
    nanobot.write(root, NOW)
    folder = next((root / "sessions").iterdir())
    originals = sorted(folder.glob("*.jsonl"))
    for n in range(sessions - len(originals)):
        lines = originals[n % len(originals)].read_text(encoding="utf-8").splitlines(keepends=True)
        meta = json.loads(lines[0])
        meta["key"] = f"{meta['key']}-{n}"
        name = base64.urlsafe_b64encode(meta["key"].encode()).decode().rstrip("=")
        body = json.dumps(meta, ensure_ascii=False) + "\n" + "".join(lines[1:])
        (folder / f"{name}.jsonl").write_text(body, encoding="utf-8")
    return {"count": max(sessions, len(originals))}


def write_memory(root: Path, entries: int, rng: random.Random) -> dict[str, int]:
    """The demo's data dir with its long-term memory grown to `entries`, the demo's entries reworded."""
    yachiyo.write(root, NOW)
    path = root / "long-term-memory" / "memory.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    demo, grown = doc["entries"], []
    stamp = NOW - timedelta(days=400)
    for n in range(entries):
        stamp += timedelta(seconds=rng.randint(60, 600))
        z = stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03}Z"
        base = demo[n % len(demo)]
        content = base["content"] if n < len(demo) else f"{base['content']} (#{n})"
        ids = {"id": f"mem-{uuid.UUID(int=rng.getrandbits(128), version=4)}"}
        grown.append(base | ids | {"content": content, "created_at": z, "updated_at": z})
    doc["entries"], doc["updated_at"] = grown, grown[-1]["updated_at"]
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    return {"count": entries}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the corpus folder")
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every count (default 1)")
    parser.add_argument("--seed", default="bench", help="seed of the random sizes and sessions")
    args = parser.parse_args(argv)
    if args.scale <= 0:
        parser.error("--scale must be above 0")
    manifest = ensure(args.out, args.scale, args.seed)
    print(f"{args.out}: {manifest['bytes'] / 1e6:,.0f} MB, {json.dumps(manifest['counts'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
