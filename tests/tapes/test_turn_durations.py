"""The stats panel's turn duration and GET /api/overview's, against each sample file's own timestamps."""

from __future__ import annotations

import json
import math
import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tapeview.tapes import discovery, index
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NANOBOT = "nanobot/current/sessions/b8ca9e09c12a8b370fe81503daa78f45/dGVsZWdyYW06ODEyMzQ1Njc4OQ.jsonl"
ARALIYA = "araliya/bot-pkey51aee87e/memory/sessions/01a200e4-e18d-7ffd-b1d0-f7592c930f76/transcript.md"
YACHIYO = "yachiyo/data/session-store/sessions/sess-markdown-demo.json"


def when(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def bub_runs(path: Path) -> list[float]:
    """Bub 0.5.1: a run from its `loop.start` (or a comma command's) to its last line before the next,
    the bookkeeping between runs (anchors, handoffs, commands, model switches, a step's start, the
    system prompt) left out; a command with nothing after it is no run."""
    between = {"handoff", "model_switch", "command", "loop.step.start"}
    runs: list[list[datetime]] = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        name = entry["payload"].get("name") if entry["kind"] == "event" else None
        if name in ("loop.start", "command"):
            runs.append([when(entry["date"])])
        elif runs and entry["kind"] not in ("anchor", "system") and name not in between:
            runs[-1].append(when(entry["date"]))
    return [(max(r) - r[0]).total_seconds() for r in runs if len(r) > 1]


def bub_steps(path: Path) -> list[float]:
    """Bub 0.2, which wrote no loop start: each step from its user's message to its last line before
    the next step starts, anchors, handoffs and commands left out."""
    steps: list[list[datetime]] = []
    step_over = True  # before the first user's message, or in the next step's bookkeeping
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        name = entry["payload"].get("name") if entry["kind"] == "event" else None
        if entry["kind"] == "message" and entry["payload"].get("role") == "user":
            steps.append([])
            step_over = False
        step_over = step_over or name == "loop.step.start"
        counted = entry["kind"] not in ("anchor", "system") and name not in ("handoff", "command")
        if not step_over and counted:
            steps[-1].append(datetime.fromtimestamp(entry["timestamp"], UTC))  # 0.2: seconds
    return [(max(s) - min(s)).total_seconds() for s in steps]


def bub_next_runs(path: Path) -> list[float]:
    """Bub's next format: from each `loop.start` (or a comma command) to the end of the agent's
    invocation that follows (completed or failed)."""
    opens = ("build.bub.loop.start.v1", "build.bub.command.v1")
    ends = ("build.bub.agent.invocation.completed.v1", "build.bub.agent.invocation.failed.v1")
    runs, start = [], None
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event["type"] in opens:
            start = when(event["time"])
        elif event["type"] in ends and start is not None:
            runs.append((when(event["time"]) - start).total_seconds())
            start = None
    return runs


def nanobot_turns(path: Path) -> list[float]:
    """nanobot: a user's message to the last row before the next, or to the answer when the agent
    then writes on its own (a message it sends without a user's: a turn of its own)."""
    turns: list[list[datetime]] = []
    answered = False
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row.get("_type") == "metadata":
            continue
        if row["role"] == "user" or answered:
            turns.append([])
        turns[-1].append(when(row["timestamp"]))
        answered = row["role"] == "assistant" and not row.get("tool_calls")  # (calls: its tools follow)
    return [(max(t) - min(t)).total_seconds() for t in turns]


def araliya_exchanges(path: Path) -> list[float]:
    """araliya: each user's header to the assistant's header that answers it."""
    headers = re.findall(r"^### (user|assistant) — (\S+)$", path.read_text(), re.M)
    out, asked = [], None
    for role, stamp in headers:
        if role == "user":
            asked = when(stamp)
        elif asked is not None:
            out.append((when(stamp) - asked).total_seconds())
            asked = None
    return out


def yachiyo_runs(path: Path) -> list[float]:
    """yachiyo: each run's events (by its trace id), first to last."""
    session = json.loads(path.read_text())
    out = []
    for run in session["runs"]:
        times = [
            when(e["created_at"]) for e in session["events"] if e["event"]["trace_id"] == run["trace_id"]
        ]
        out.append((max(times) - min(times)).total_seconds())
    return out


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def panel_text(durations: list[float]) -> str:
    """As a person reads the panel: tenths of a second below 10 s (every sample's turns are)."""
    n = len(durations)
    p50, p99 = nearest_rank(durations, 0.5), nearest_rank(durations, 0.99)
    return f"p50 {p50:.1f} s · p99 {p99:.1f} s over {n:,} turn{'s' if n != 1 else ''}"


def shown(client, query: str = "") -> str:
    page = client.get(f"/{query}").content.decode()
    found = re.search(r'<dd id="stat-turn-length">(.*?)</dd>', page, re.S)
    assert found, "no turn duration in the stats panel"
    return re.sub(r"<[^>]+>", "", found.group(1)).strip()


def figures(client, query: str = "") -> dict:
    answer = client.get(f"/api/overview{query}")
    assert answer.status_code == 200, answer.content
    return answer.json()["turn_length"]


def index_source(settings, spec: str) -> None:
    settings.TAPEVIEW_SOURCES = spec
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()


SAMPLES = {
    # family: (the file, the folder copied, the source, its kind's rule)
    "bub": ("bub/session_realistic.jsonl", "tapes", "bub:{root}", bub_runs),
    "bub 0.2": ("bub/legacy_v0.2.3_session_timestamp.jsonl", "tapes", "bub:{root}", bub_steps),
    "bub-next": ("bub-next/session_realistic.jsonl", "tapes", "bub:{root}", bub_next_runs),
    "nanobot": (NANOBOT, None, "nanobot:{root}/nanobot/current", nanobot_turns),
    "araliya": (ARALIYA, None, "araliya:{root}/araliya", araliya_exchanges),
    "yachiyo": (YACHIYO, None, "yachiyo:{root}/yachiyo/data", yachiyo_runs),
}


@pytest.mark.parametrize("family", list(SAMPLES))
def test_the_panel_shows_the_turn_durations_of_the_sample_file(
    family, settings, tmp_path, viewer_client
) -> None:
    rel, alone, spec, rule = SAMPLES[family]
    if alone:  # a Bub tape alone in its tapes folder
        (tmp_path / alone).mkdir()
        shutil.copy(FIXTURES / rel, tmp_path / alone / Path(rel).name)
        root = tmp_path / alone
    else:
        top = rel.split("/")[0]
        shutil.copytree(FIXTURES / top, tmp_path / top)
        root = tmp_path
    index_source(settings, "s=" + spec.format(root=root))
    only = Tape.objects.get(path__endswith=rel.split("/", 1)[1])
    durations = rule(FIXTURES / rel)
    assert durations, "the rule finds the sample's turns"
    query = f"?filter=name == {json.dumps(only.name)}"
    assert shown(viewer_client, query) == panel_text(durations)
    got = figures(viewer_client, query)
    assert got["known"] == len(durations)
    assert got["p50_seconds"] == pytest.approx(nearest_rank(durations, 0.5), abs=1e-6)
    assert got["p99_seconds"] == pytest.approx(nearest_rank(durations, 0.99), abs=1e-6)


def test_a_tape_without_times_shows_a_dash_and_counts_no_turn(settings, tmp_path, viewer_client) -> None:
    root = tmp_path / "tapes"
    root.mkdir()
    shutil.copy(FIXTURES / "bub" / "memory_zone_pr33_unmerged.jsonl", root)
    index_source(settings, f"s=bub:{root}")
    lines = (root / "memory_zone_pr33_unmerged.jsonl").read_text().splitlines()
    assert not any("date" in json.loads(line) for line in lines)  # no line has a time
    assert Tape.objects.get().entries > 0
    assert shown(viewer_client) == "–"
    assert figures(viewer_client) == {"known": 0, "p50_seconds": None, "p99_seconds": None}


T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)


def bub_line(i: int, kind: str, payload: dict, seconds: float) -> str:
    return json.dumps(
        {"id": i, "kind": kind, "payload": payload, "meta": {}, "date": str(T0 + timedelta(seconds=seconds))}
    )


def loop_start(i: int, s: float) -> str:
    return bub_line(i, "event", {"name": "loop.start", "data": {}}, s)


def user(i: int, s: float) -> str:
    return bub_line(i, "message", {"role": "user", "content": "go"}, s)


def answer(i: int, s: float) -> str:
    return bub_line(i, "message", {"role": "assistant", "content": "done"}, s)


def step_ok(i: int, s: float) -> str:
    return bub_line(i, "event", {"name": "loop.step", "data": {"status": "ok"}}, s)


def handoff(i: int, s: float) -> str:
    return bub_line(i, "anchor", {"name": "later", "state": {}}, s)


def write(path: Path, lines: list[str], mode: str = "w") -> None:
    with path.open(mode) as f:
        f.write("".join(line + "\n" for line in lines))


@pytest.fixture
def live(settings, tmp_path) -> Path:
    root = tmp_path / "tapes"
    root.mkdir()
    tape = root / "live.jsonl"
    # A run of 2 s, an operator's handoff an hour later (between runs: no run's), a run still open at 1 s.
    write(
        tape,
        [loop_start(1, 0), user(2, 0.5), answer(3, 1.5), step_ok(4, 2), handoff(5, 3600)]
        + [loop_start(6, 3700), user(7, 3701)],
    )
    index_source(settings, f"s=bub:{root}")
    return tape


def test_an_append_that_finishes_the_open_turn_changes_the_figure(live, viewer_client) -> None:
    assert figures(viewer_client) == {"known": 2, "p50_seconds": 1.0, "p99_seconds": 2.0}
    assert shown(viewer_client) == "p50 1.0 s · p99 2.0 s over 2 turns"
    write(live, [answer(8, 3712), step_ok(9, 3713)], "a")
    index.refresh(Tape.objects.get())
    assert figures(viewer_client) == {"known": 2, "p50_seconds": 2.0, "p99_seconds": 13.0}
    assert shown(viewer_client) == "p50 2.0 s · p99 13 s over 2 turns"


def test_turns_counted_across_batches_are_the_turns_of_one(live, viewer_client, monkeypatch) -> None:
    whole = figures(viewer_client)
    monkeypatch.setattr(index._Run, "size", 1)  # a batch a line: every turn goes on across batches
    tape = Tape.objects.get()
    write(live, [answer(8, 3712), step_ok(9, 3713)], "a")
    index.refresh(tape)
    by_line = figures(viewer_client)
    live.unlink()  # made again (a new inode): indexed afresh, in one batch
    write(
        live,
        [loop_start(1, 0), user(2, 0.5), answer(3, 1.5), step_ok(4, 2), handoff(5, 3600)]
        + [loop_start(6, 3700), user(7, 3701), answer(8, 3712), step_ok(9, 3713)],
    )
    monkeypatch.undo()
    index.refresh(tape)
    assert whole["known"] == 2
    assert by_line == figures(viewer_client) == {"known": 2, "p50_seconds": 2.0, "p99_seconds": 13.0}


def test_a_reset_tape_replaces_its_turns_and_a_removed_one_drops_them(live, settings, viewer_client) -> None:
    live.unlink()
    write(live, [loop_start(1, 0), user(2, 1), answer(3, 5), step_ok(4, 5)])
    index.refresh(Tape.objects.get())
    assert figures(viewer_client) == {"known": 1, "p50_seconds": 5.0, "p99_seconds": 5.0}
    live.unlink()
    discovery.sync()
    assert shown(viewer_client) == "–"


def test_the_figure_follows_the_filters(live, settings, tmp_path, viewer_client) -> None:
    other = tmp_path / "other"
    shutil.copytree(FIXTURES / "nanobot", other)
    index_source(settings, f"s=bub:{live.parent},nb=nanobot:{other / 'current'}")
    nanobot = nanobot_turns(FIXTURES / NANOBOT)
    assert figures(viewer_client, "?kind=bub")["known"] == 2
    assert figures(viewer_client, '?filter=kind == "bub"')["known"] == 2
    assert shown(viewer_client, "?kind=bub") == "p50 1.0 s · p99 2.0 s over 2 turns"
    telegram = Tape.objects.get(path__endswith=Path(NANOBOT).name)
    assert figures(viewer_client, f"?filter=name == {json.dumps(telegram.name)}")["known"] == len(nanobot)
    # The bub tape was last active on 20 November, every nanobot session before the 19th.
    everything = figures(viewer_client)["known"]
    assert everything > 2 + len(nanobot) - 1
    assert figures(viewer_client, "?since=2026-11-19T00:00:00Z")["known"] == 2
    assert figures(viewer_client, "?until=2026-11-19T00:00:00Z")["known"] == everything - 2
    assert figures(viewer_client, "?since=2030-01-01T00:00:00Z")["known"] == 0
    assert shown(viewer_client, "?since=2030-01-01T00:00") == "–"
    assert viewer_client.get("/api/overview?filter=kind ==").status_code == 400
