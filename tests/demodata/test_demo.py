"""The demo Bub tapes and the benchmark tape are written exactly in the agent's on-disk format."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

from tapeview.demodata.bub import bub_turns, write_bub_demo

NOW = datetime(2026, 11, 22, 9, 30, 15, 123456, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]
KEYS = ["id", "kind", "payload", "meta", "date"]
STAMP = r"\d{8}T\d{6}Z"


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def tape(workspace: str, session: str) -> str:
    return f"{md5(workspace)[:16]}__{md5(session)[:16]}"


CSVKIT, WEATHERBOT, NOTES = "/home/ana/src/csvkit-lite", "/home/ana/src/weatherbot", "/home/ana/notes"
SESSIONS = {
    tape(CSVKIT, "cli:local"),
    tape(CSVKIT, "telegram:-1001234567890"),
    tape(WEATHERBOT, "cli:local"),
    tape(WEATHERBOT, "discord:1187654321098765432"),
    tape(NOTES, "cli:local"),
}
LEGACY = f"{md5(CSVKIT)}__bub%3A{md5('cli:local')[:16]}.jsonl"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo") / "tapes"
    write_bub_demo(root, NOW)
    return root


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def all_entries(root: Path) -> list[dict[str, Any]]:
    return [e for path in sorted(root.iterdir()) for e in entries(path)]


def events(root: Path, name: str) -> list[dict[str, Any]]:
    return [e for e in all_entries(root) if e["kind"] == "event" and e["payload"]["name"] == name]


def test_the_function_returns_every_file_it_wrote(demo: Path, tmp_path: Path) -> None:
    written = write_bub_demo(tmp_path / "tapes", NOW)

    assert [p.name for p in written] == sorted(p.name for p in demo.iterdir())
    assert all(p.is_file() for p in written)


def test_every_line_is_in_the_agents_format(demo: Path) -> None:
    for path in demo.iterdir():
        for line in path.read_bytes().decode("utf-8").splitlines(keepends=True):
            entry = json.loads(line)
            assert line == json.dumps(entry, ensure_ascii=False) + "\n", path.name
            assert list(entry) == (KEYS[:4] if path.name == LEGACY else KEYS), path.name
            assert isinstance(entry["id"], int) and isinstance(entry["kind"], str)
            assert isinstance(entry["payload"], dict) and isinstance(entry["meta"], dict)
            if "date" in entry:
                when = datetime.fromisoformat(entry["date"])
                assert when.utcoffset() is not None and when.utcoffset().total_seconds() == 0
                assert when.isoformat() == entry["date"], "dates are datetime.isoformat() in UTC"


def test_unicode_is_written_raw_not_escaped(demo: Path) -> None:
    text = "".join(p.read_text(encoding="utf-8") for p in demo.iterdir())

    assert "\\u" not in text
    for sample in ("引号", "リリースノート", "天気予報", "🎉", "📼"):
        assert sample in text


def test_ids_count_up_from_one_in_every_file(demo: Path) -> None:
    for path in demo.iterdir():
        assert [e["id"] for e in entries(path)] == list(range(1, len(entries(path)) + 1)), path.name


def test_file_names_follow_bubs_hashing_scheme(demo: Path) -> None:
    names = {p.name for p in demo.iterdir()}
    main, telegram = tape(CSVKIT, "cli:local"), tape(CSVKIT, "telegram:-1001234567890")

    assert {f"{name}.jsonl" for name in SESSIONS} <= names
    assert f"{main}__sidecar__spill.jsonl" in names
    assert LEGACY in names
    assert any(re.fullmatch(rf"{telegram}\.jsonl\.{STAMP}\.bak", n) for n in names)
    assert any(re.fullmatch(rf"{telegram}__sidecar__spill\.jsonl\.{STAMP}\.bak", n) for n in names)
    assert len(names) == 9


def test_session_tapes_hold_40_to_400_entries(demo: Path) -> None:
    for name in SESSIONS:
        assert 40 <= len(entries(demo / f"{name}.jsonl")) <= 400, name


def test_every_session_starts_with_the_bootstrap_handoff(demo: Path) -> None:
    for name in [*SESSIONS, LEGACY.removesuffix(".jsonl")]:
        first, second = entries(demo / f"{name}.jsonl")[:2]
        assert first["kind"] == "anchor" and first["payload"]["name"] == "session/start"
        assert second["payload"] == {"name": "handoff", "data": first["payload"]}


def test_nothing_is_dated_after_now(demo: Path) -> None:
    dates = [datetime.fromisoformat(e["date"]) for e in all_entries(demo) if "date" in e]

    assert max(dates) < NOW
    assert any(d.microsecond == 0 for d in dates), "some dates show the fraction-less ISO form"


def test_turns_follow_bubs_order(demo: Path) -> None:
    for name in SESSIONS:
        tape_entries = entries(demo / f"{name}.jsonl")
        for before, entry in zip(tape_entries, tape_entries[1:], strict=False):
            if entry["kind"] == "tool_result":
                assert before["kind"] == "tool_call"
                assert len(entry["payload"]["results"]) == len(before["payload"]["calls"])
            if before["kind"] == "event" and before["payload"]["name"] == "loop.start":
                assert entry["payload"] == {
                    "name": "loop.step.start",
                    "data": {"step": 1, "prompt": before["payload"]["data"]["prompt"]},
                }
            if entry["kind"] == "message" and entry["payload"]["role"] == "user":
                assert before["kind"] == "system" and before["meta"] == entry["meta"]
                assert re.match(
                    r"sender_id=[^|]+\|channel=\$\w+\|chat_id=\S+\n---Date: .+---\n",
                    entry["payload"]["content"],
                )


def test_every_llm_call_records_usage_with_cached_tokens(demo: Path) -> None:
    runs = [
        e for name in SESSIONS for e in entries(demo / f"{name}.jsonl") if e["payload"].get("name") == "run"
    ]

    for run in runs:
        assert run["meta"]["run_id"].startswith("run-")
        if run["payload"]["data"]["status"] == "ok":
            usage = run["payload"]["data"]["usage"]
            assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
            assert 0 <= usage["prompt_tokens_details"]["cached_tokens"] <= usage["prompt_tokens"]


def test_handoffs_come_by_tool_and_by_command(demo: Path) -> None:
    calls = [c for e in all_entries(demo) if e["kind"] == "tool_call" for c in e["payload"]["calls"]]
    commands = [e["payload"]["data"] for e in events(demo, "command")]
    anchors = {e["payload"]["name"] for e in all_entries(demo) if e["kind"] == "anchor"}

    assert any(c["function"]["name"] == "tape_handoff" for c in calls)
    assert any(c["name"] == "tape.handoff" and not c["raw"].startswith(",") for c in commands)
    assert {"phase/explore-done", "phase/fix-quoting", "topic/release-0.4-done"} <= anchors
    for handoff in events(demo, "handoff"):
        assert set(handoff["payload"]["data"]) == {"name", "state"}


def test_the_demo_shows_errors_of_every_kind(demo: Path) -> None:
    everything = all_entries(demo)
    results = [r for e in everything if e["kind"] == "tool_result" for r in e["payload"]["results"]]
    steps = {e["payload"]["data"]["status"] for e in events(demo, "loop.step")}

    assert any(e["kind"] == "error" and e["payload"]["kind"] == "not_found" for e in everything)
    assert any(e["payload"]["data"]["status"] == "error" for e in events(demo, "run"))
    assert {"continue", "ok", "error", "auto_handoff"} <= steps
    assert any(
        e["kind"] == "anchor" and e["payload"]["name"] == "auto_handoff/context_overflow" for e in everything
    )
    failed = [r for r in results if isinstance(r, dict)]
    assert failed and all(
        set(r) == {"kind", "message", "details"} and "error" in r["details"] for r in failed
    )


def test_the_demo_shows_parallel_calls_model_switch_and_text_with_calls(demo: Path) -> None:
    calls = [e for e in all_entries(demo) if e["kind"] == "tool_call"]
    outputs = [r for e in all_entries(demo) if e["kind"] == "tool_result" for r in e["payload"]["results"]]

    assert any(len(e["payload"]["calls"]) >= 3 for e in calls)
    assert any(e["payload"].get("content") for e in calls)
    assert events(demo, "model_switch")
    assert any(isinstance(r, str) and r.count("\n") > 5 for r in outputs)


def test_the_spill_sidecar_holds_the_whole_spilled_output(demo: Path) -> None:
    main = tape(CSVKIT, "cli:local")
    (write,) = [e for e in entries(demo / f"{main}.jsonl") if e["payload"].get("name") == "spill.write"]
    sidecar = entries(demo / f"{main}__sidecar__spill.jsonl")
    handle = write["payload"]["data"]["handle"]
    chunks = [e for e in sidecar if e["kind"] == "tool_result"]
    (manifest,) = [e for e in sidecar if e["payload"].get("name") == "spill.manifest"]

    assert write["meta"]["context"] is False
    assert [e["payload"]["name"] for e in sidecar if e["kind"] == "anchor"] == [
        *(f"spill/{handle}/chunk/{i}" for i in range(len(chunks))),
        f"spill/{handle}/manifest",
    ]
    assert [c["meta"] for c in chunks] == [
        {"spill_handle": handle, "spill_chunk": i} for i in range(len(chunks))
    ]
    data = "".join(c["payload"]["results"][0] for c in chunks).encode()
    assert manifest["payload"]["data"]["bytes"] == len(data) == write["payload"]["data"]["bytes"]
    assert manifest["payload"]["data"]["chunks"] == len(chunks) >= 2


def test_the_reset_tape_points_at_its_archive(demo: Path) -> None:
    telegram = tape(CSVKIT, "telegram:-1001234567890")
    (bak,) = demo.glob(f"{telegram}.jsonl.*.bak")
    (sidecar_bak,) = demo.glob(f"{telegram}__sidecar__spill.jsonl.*.bak")
    reset = entries(demo / f"{telegram}.jsonl")

    assert reset[0]["payload"]["state"] == {"owner": "human", "archived": str(bak.resolve())}
    assert [e["payload"]["name"] for e in reset[2:4]] == ["sidecar.archive", "sidecar.reset"]
    assert all(e["meta"] == {"context": False} for e in reset[2:4])
    assert reset[2]["payload"]["data"]["archive"] == str(sidecar_bak.resolve())
    assert reset[4]["payload"]["data"]["raw"] == "tape.reset archive=true"
    assert sidecar_bak.stat().st_size == 0
    assert entries(bak)[0]["payload"]["state"] == {"owner": "human"}
    assert entries(bak)[-1]["date"] < reset[0]["date"]


def test_the_legacy_tape_has_no_time_and_the_old_vocabulary(demo: Path) -> None:
    legacy = entries(demo / LEGACY)
    names = {e["payload"]["name"] for e in legacy if e["kind"] == "event"}
    commands = [e["payload"]["data"] for e in legacy if e["payload"].get("name") == "command"]
    runs = [e["payload"]["data"] for e in legacy if e["payload"].get("name") == "run"]

    assert not any("date" in e or "timestamp" in e for e in legacy)
    assert {"loop.step.start", "loop.step.finish", "loop.result"} <= names
    assert not names & {"loop.start", "loop.step"}
    assert all(set(c) >= {"origin", "kind", "raw"} and c["raw"].startswith(",") for c in commands)
    assert all(r["provider"] == "openrouter" and ":" not in r["model"] for r in runs)
    assert all(re.fullmatch(r"[0-9a-f]{32}", e["meta"]["run_id"]) for e in legacy if "run_id" in e["meta"])


def test_the_memory_zone_keeps_every_version(demo: Path) -> None:
    notes = entries(demo / f"{tape(NOTES, 'cli:local')}.jsonl")
    zones: list[list[dict[str, Any]]] = []
    for e in notes:
        name = e["payload"].get("name", "")
        if name == "memory/open":
            zones.append([])
        elif name.startswith("memory.") and e["kind"] == "event":
            zones[-1].append(e["payload"]["data"])
    opens = [e["payload"]["state"]["version"] for e in notes if e["payload"].get("name") == "memory/open"]
    seals = [e["payload"]["state"]["version"] for e in notes if e["payload"].get("name") == "memory/seal"]
    dailies = [[d["date"] for d in zone if "date" in d] for zone in zones]

    assert opens == seals == list(range(1, len(opens) + 1))
    assert zones[0] == [] and [] in zones[1:], "the first zone and the one after a clear are empty"
    assert any(len(b) < len(a) and b for a, b in zip(dailies, dailies[1:], strict=False)), "a prune"
    for zone in zones:
        days = [d["date"] for d in zone if "date" in d]
        assert days == sorted(days, reverse=True)
        assert all(d["content"].startswith(f"# {d['date']}\n\n") for d in zone if "date" in d)


def test_the_output_is_deterministic_for_a_fixed_now(tmp_path: Path) -> None:
    root = tmp_path / "tapes"
    write_bub_demo(root, NOW)
    first = {p.name: p.read_bytes() for p in root.iterdir()}
    shutil.rmtree(root)
    write_bub_demo(root, NOW)

    assert {p.name: p.read_bytes() for p in root.iterdir()} == first
    write_bub_demo(tmp_path / "later", NOW.replace(year=2027))
    later = {p.name for p in (tmp_path / "later").iterdir()}
    assert later != set(first), "the archive stamp follows now"


def test_bub_turns_can_continue_a_tape(demo: Path) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    fresh = list(islice(bub_turns(random.Random(1), 1, start), 30))
    continued = list(islice(bub_turns(random.Random(1), 500, start), 30))

    assert fresh[0]["payload"]["name"] == "session/start"
    assert [e["id"] for e in continued] == list(range(500, 530))
    assert all(e["payload"].get("name") != "session/start" for e in continued)


def test_the_bench_script_writes_the_requested_number_of_entries(tmp_path: Path) -> None:
    out = tmp_path / "big.jsonl"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "make_tape.py"), str(out), "--entries", "700"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )

    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) == 700
    assert [json.loads(line)["id"] for line in lines] == list(range(1, 701))
    assert all(list(json.loads(line)) == KEYS for line in lines)
    assert sum(1 for line in lines if '"kind": "system"' in line) > 50
    assert sum(1 for line in lines if '"name": "handoff"' in line) >= 3
    assert (
        str(out) in done.stdout
        and "700 entries" in done.stdout
        and f"{out.stat().st_size} bytes" in done.stdout
    )
