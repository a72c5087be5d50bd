"""Write a large tape in Bub's next format: python bench/make_next_tape.py OUT.jsonl --entries N.

The lines have the real shapes: the turns of tests/fixtures/bub-next/session_realistic.jsonl (written
by Bub's own code) repeated with fresh ids, turn ids and times, a `,tape.handoff` every 40 turns,
encoded as Bub encodes them (json.dumps' defaults); the system prompt is cut so that an entry averages
about 920 bytes, as on the 200,000-event tape Bub wrote for the format's checks.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "bub-next" / "session_realistic.jsonl"
HANDOFF_EVERY = 40  # turns
SYSTEM_PROMPT_CHARS = 1800
RESULT_CHARS = 1200


def turns(sample: Path = SAMPLE) -> tuple[list[list[dict]], list[dict]]:
    """The sample's loop turns that ended well (each a list of events), and its comma-command handoff."""
    events = [json.loads(line) for line in sample.read_text().splitlines()]
    groups: list[list[dict]] = []
    for event in events:
        name = event["type"][len("build.bub.") : -len(".v1")]
        if name in ("loop.start", "command") or not groups:
            groups.append([])
        groups[-1].append(event)
    loops = [g for g in groups if g[0]["type"].endswith("loop.start.v1") and _ended(g)]
    handoff = next(g for g in groups if g[0]["type"].endswith("command.v1"))
    anchor = next(
        e for e in events if e["type"].endswith("context.anchor.v1") and "phase/implement" in json.dumps(e)
    )
    return [_shortened(g) for g in loops], [anchor, *handoff]


def _ended(group: list[dict]) -> bool:
    return group[-1]["type"].endswith("agent.invocation.completed.v1") and not any(
        "anchor" in e["type"] for e in group
    )


def _shortened(group: list[dict]) -> list[dict]:
    for event in group:
        data = event["data"]
        if data["source"] == "system" and isinstance(data["message"], str) and data["message"]:
            data["message"] = data["message"][:SYSTEM_PROMPT_CHARS]
        for result in data.get("observation", {}).get("results", []):
            if isinstance(result.get("content"), str) and len(result["content"]) > RESULT_CHARS:
                result["content"] = result["content"][:RESULT_CHARS]
    return group


def write_tape(out: Path, entries: int) -> int:
    loops, handoff = turns()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out.parent.mkdir(parents=True, exist_ok=True)
    written, turn = 0, 0
    with open(out, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as f:
        while written < entries:
            template = handoff if turn and turn % HANDOFF_EVERY == 0 else loops[turn % len(loops)]
            turn_id, invocation = str(uuid.uuid4()), str(uuid.uuid4())
            for event in template:
                if written >= entries:
                    break
                event = copy.deepcopy(event)
                when = start + timedelta(seconds=written * 3)
                event["id"] = str(uuid.uuid4())
                event["time"] = when.isoformat().replace("+00:00", "Z")
                event["data"]["timestamp"] = when.isoformat()
                event["data"]["step_id"] = written + 1
                if "bubturnid" in event:
                    event["bubturnid"], event["bubinvocationid"] = turn_id, invocation
                f.write(json.dumps(event) + "\n")
                written += 1
            turn += 1
    return out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="the .jsonl file to write")
    parser.add_argument("--entries", type=int, default=200_000, help="how many entries (default 200000)")
    args = parser.parse_args(argv)
    if args.entries < 1:
        parser.error("--entries must be at least 1")
    size = write_tape(args.out, args.entries)
    print(f"{args.out}: {args.entries} entries, {size} bytes ({size / args.entries:.0f} an entry)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
