"""Check a tape's traces in a running Arize Phoenix: its turns, model calls, tools and tokens.

    python bench/otlp_phoenix.py [--phoenix http://127.0.0.1:6006] [TAPE.jsonl]

Phoenix is not a dependency of Tapeview: install and start it on its own (see the README's
"OpenTelemetry" section). The tape (default: the Bub sample of the tests) is indexed in a
Tapeview home of its own, sent with `tapeview export --otlp`, then read back from Phoenix's REST
and GraphQL APIs: each turn a trace whose root is the agent's turn, its model calls (LLM spans)
with their tokens and its tool calls (TOOL spans), and the tape as one Phoenix session.
Exits 1 when Phoenix shows other turns, calls or tokens than the tape holds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "fixtures" / "bub" / "session_realistic.jsonl"


def get(url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def phoenix_spans(phoenix: str, session: str) -> list[dict]:
    found, cursor = [], None
    while True:
        after = f"&cursor={cursor}" if cursor else ""
        page = get(f"{phoenix}/v1/projects/default/spans?limit=1000{after}")
        found += [s for s in page["data"] if s["attributes"].get("session.id") == session]
        cursor = page.get("next_cursor")
        if not cursor:
            return found


def phoenix_session(phoenix: str, session: str) -> dict | None:
    query = (
        "{ projects { edges { node { sessions(first: 100) { edges { node {"
        " sessionId numTraces tokenUsage { prompt completion } } } } } } } }"
    )
    for project in get(f"{phoenix}/graphql", {"query": query})["data"]["projects"]["edges"]:
        for edge in project["node"]["sessions"]["edges"]:
            if edge["node"]["sessionId"] == session:
                return edge["node"]
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tape", nargs="?", type=Path, default=SAMPLE, help="a Bub tape (JSONL)")
    parser.add_argument("--phoenix", default="http://127.0.0.1:6006", help="Phoenix's URL")
    args = parser.parse_args()
    name = args.tape.stem
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bub"
        folder.mkdir()
        (folder / args.tape.name).write_bytes(args.tape.read_bytes())
        env = dict(os.environ, TAPEVIEW_HOME=str(Path(tmp) / "home"), TAPEVIEW_SOURCES=f"bub=bub:{folder}")
        env.pop("TAPEVIEW_DATABASE_URL", None)
        done = subprocess.run(
            [sys.executable, "-m", "tapeview", "export", "--otlp", args.phoenix, name],
            env=env,
            capture_output=True,
            text=True,
        )
    print(done.stdout.strip() or done.stderr.strip())
    if done.returncode:
        return 1
    sent = dict(item.split(" ")[::-1] for item in done.stdout.split(": ", 1)[1].split(" sent")[0].split(", "))
    deadline = time.monotonic() + 30
    while True:  # Phoenix writes what it received in the background
        spans = phoenix_spans(args.phoenix, name)
        if len(spans) >= int(sent["spans"]) or time.monotonic() > deadline:
            break
        time.sleep(1)
    traces: dict[str, Counter] = {}
    tokens = Counter()
    for s in spans:
        traces.setdefault(s["context"]["trace_id"], Counter())[s["span_kind"]] += 1
        if s["span_kind"] == "LLM":
            tokens["prompt"] += s["attributes"].get("llm.token_count.prompt", 0)
            tokens["completion"] += s["attributes"].get("llm.token_count.completion", 0)
    tools = Counter(s["attributes"].get("tool.name") for s in spans if s["span_kind"] == "TOOL")
    print(f"Phoenix shows {len(traces)} traces of session {name!r}, {len(spans)} spans:")
    roots = sorted((s for s in spans if s["parent_id"] is None), key=lambda s: s["start_time"])
    for s in roots:
        kinds = traces[s["context"]["trace_id"]]
        print(
            f"  {s['start_time']}  {s['name']:<20} {kinds['LLM']} model calls, {kinds['TOOL']} tools"
            f"  {s['status_code']}"
        )
    print(f"  tools: {dict(tools)}")
    print(f"  tokens of the model calls: {tokens['prompt']} prompt, {tokens['completion']} completion")
    session = phoenix_session(args.phoenix, name)
    print(f"  Phoenix's session: {session}")
    ok = (
        len(roots) == int(sent["turns"])
        and len(spans) == int(sent["spans"])
        and all(s["span_kind"] == "AGENT" for s in roots)
    )
    ok = ok and session is not None and session["numTraces"] == len(roots)
    ok = ok and session["tokenUsage"]["prompt"] == tokens["prompt"] and tokens["prompt"] > 0
    print("as sent" if ok else "NOT as sent")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
