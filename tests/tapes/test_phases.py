"""GET /api/tapes/{id}/phases: each phase's statistics as the sample files say, kept as batches are indexed."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from tapeview.tapes import discovery, index
from tapeview.tapes.models import Anchor, Tape

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PHASE_KEYS = {
    "index",
    "anchor",
    "start_pos",
    "end_pos",
    "entries",
    "started_at",
    "ended_at",
    "duration_s",
    "tokens",
    "tool_calls",
    "errors",
    "model",
    "messages",
}


def bub_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def is_error(line: dict) -> bool:
    """Bub's error rule (formats/bub.md §2.1): error entries, failed tool results, failed events."""
    kind, payload = line["kind"], line["payload"]
    if kind == "error":
        return True
    if kind == "tool_result":
        return any(isinstance(r, dict) and "message" in r and "kind" in r for r in payload.get("results", []))
    if kind == "event":
        data = payload.get("data") or {}
        name = payload.get("name", "")
        return data.get("status") == "error" or name.endswith(".error")
    return False


def expected_bub_phases(path: Path) -> list[dict]:
    """The phases of a Bub tape computed from its lines with plain json: one per anchor that is not memory/ or spill/."""
    lines = bub_lines(path)
    starts = [
        i
        for i, line in enumerate(lines)
        if line["kind"] == "anchor" and not line["payload"]["name"].startswith(("memory/", "spill/"))
    ]
    lead = not starts or starts[0] != 0  # entries before the first anchor: phase 0
    if lead:
        starts = [0, *starts]
    phases = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        span = lines[start:end]
        first = span[0]
        has_anchor = first["kind"] == "anchor" and not first["payload"]["name"].startswith(
            ("memory/", "spill/")
        )
        runs = [
            line["payload"]["data"]
            for line in span
            if line["kind"] == "event"
            and line["payload"]["name"] == "run"
            and "usage" in line["payload"]["data"]
        ]
        models = [
            line["payload"]["data"]["model"]
            for line in span
            if line["kind"] == "event"
            and line["payload"]["name"] in ("run", "loop.start", "model_switch")
            and line["payload"]["data"].get("model")
        ]
        dates = [datetime.fromisoformat(line["date"]) for line in span if "date" in line]
        phases.append(
            {
                "index": n if lead else n + 1,
                "anchor": {
                    "name": first["payload"]["name"],
                    "pos": start + 1,
                    "state": first["payload"].get("state"),
                }
                if has_anchor
                else None,
                "start_pos": start + 1,
                "end_pos": end,
                "entries": len(span) - (1 if has_anchor else 0),
                "tokens": {
                    "prompt": sum(r["usage"]["prompt_tokens"] for r in runs) if runs else None,
                    "completion": sum(r["usage"]["completion_tokens"] for r in runs) if runs else None,
                    "cached": sum(r["usage"]["prompt_tokens_details"]["cached_tokens"] for r in runs)
                    if runs
                    else None,
                },
                "tool_calls": sum(
                    len(line["payload"]["calls"]) for line in span if line["kind"] == "tool_call"
                ),
                "errors": sum(is_error(line) for line in span),
                "model": models[-1] if models else None,
                "messages": dict(
                    Counter(line["payload"]["role"] for line in span if line["kind"] == "message")
                ),
                "started_at": to_ms(min(dates)) if dates else None,
                "ended_at": to_ms(max(dates)) if dates else None,
                "duration_s": (max(dates) - min(dates)).total_seconds() if dates else None,
            }
        )
    return phases


def parse_dates(item: dict) -> dict:
    out = dict(item)
    for name in ("started_at", "ended_at"):
        out[name] = datetime.fromisoformat(item[name]) if item[name] else None
    return out


def to_ms(moment: datetime | None) -> datetime | None:
    """The API writes times to the millisecond."""
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000) if moment else None


def key(name: str) -> str:
    return Tape.objects.get(name=name).key


def test_phases_of_a_bub_tape_are_its_anchors_with_what_the_file_says(reader, served) -> None:
    body = reader.get(f"/api/tapes/{key('session_realistic')}/phases").json()
    assert set(body) == {"items", "next_cursor"} and body["next_cursor"] is None
    expected = expected_bub_phases(served["samples"] / "session_realistic.jsonl")
    assert [p["anchor"]["pos"] for p in expected] == [1, 32, 45, 70]
    items = [parse_dates(item) for item in body["items"]]
    assert all(set(item) == PHASE_KEYS for item in items)
    for got, want in zip(items, expected, strict=True):
        assert got["duration_s"] == pytest.approx(want.pop("duration_s"))
        assert {k: got[k] for k in want} == want


def test_a_phase_anchor_state_is_whole_even_when_the_index_keeps_only_a_preview(reader, served) -> None:
    items = reader.get(f"/api/tapes/{key('session_realistic')}/phases").json()["items"]
    overflow = next(
        line for line in bub_lines(served["samples"] / "session_realistic.jsonl") if line["id"] == 70
    )
    state = overflow["payload"]["state"]
    assert items[-1]["anchor"]["state"] == state
    row = Anchor.objects.get(tape__name="session_realistic", pos=70)
    assert len(json.dumps(state, ensure_ascii=False)) > len(row.state)  # read from the file, not the preview


def test_phases_are_paged_with_a_cursor(reader, served) -> None:
    url = f"/api/tapes/{key('session_realistic')}/phases"
    everything = reader.get(url).json()["items"]
    seen, cursor = [], None
    while True:
        page = reader.get(url, limit=1, **({"cursor": cursor} if cursor else {})).json()
        seen += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == everything


def test_the_span_before_the_first_anchor_is_phase_zero_with_anchor_null(reader, served, tmp_path) -> None:
    # No session/start: the tape starts mid-phase, and its first anchor is phase/explore-done.
    lines = bub_lines(served["samples"] / "session_realistic.jsonl")[2:44]
    (served["samples"] / "cut.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    discovery.sync()
    items = reader.get(f"/api/tapes/{key('cut')}/phases").json()["items"]
    assert [(p["index"], p["anchor"] and p["anchor"]["name"]) for p in items] == [
        (0, None),
        (1, "phase/explore-done"),
    ]
    lead = items[0]
    assert (lead["start_pos"], lead["end_pos"], lead["entries"]) == (1, 29, 29)
    assert lead["messages"] == dict(
        Counter(x["payload"]["role"] for x in lines[:29] if x["kind"] == "message")
    )


@pytest.mark.parametrize("batch", [1, 3, 7, 5000])
def test_statistics_are_the_same_however_the_tape_is_batched_and_appended(
    reader, served, monkeypatch, batch
) -> None:
    source = served["samples"] / "session_realistic.jsonl"
    whole = reader.get(f"/api/tapes/{key('session_realistic')}/phases").json()["items"]
    monkeypatch.setattr(index, "BATCH", batch)
    raw = source.read_bytes().splitlines(keepends=True)
    grown = served["samples"] / "grown.jsonl"
    grown.write_bytes(b"")
    discovery.sync()
    tape = Tape.objects.get(name="grown")
    for start in range(0, len(raw), 11):  # appended in bursts of 11 lines, indexed after each
        with grown.open("ab") as f:
            f.write(b"".join(raw[start : start + 11]))
        index.refresh(tape)
    assert reader.get(f"/api/tapes/{tape.key}/phases").json()["items"] == whole


def test_a_tape_indexed_before_phase_statistics_is_counted_again(reader, served) -> None:
    """Migration 0005 marks indexed tapes phase_count=-1: the next refresh indexes them from the start."""
    tape = Tape.objects.get(name="session_realistic")
    want = reader.get(f"/api/tapes/{tape.key}/phases").json()["items"]
    Anchor.objects.filter(tape=tape).update(prompt_tokens=None, tool_calls=0, phase_index=None)
    Tape.objects.filter(pk=tape.pk).update(phase_count=-1, indexed_at=None, lead_phase=None)
    assert reader.get(f"/api/tapes/{tape.key}/phases").json()["items"] == want
    tape.refresh_from_db()
    assert tape.entries == len(bub_lines(served["samples"] / "session_realistic.jsonl"))


@pytest.fixture
def families(settings, tmp_path: Path) -> dict[str, Path]:
    roots = {}
    for name in ("nanobot", "yachiyo", "araliya"):
        roots[name] = tmp_path / name
        shutil.copytree(FIXTURES / name, roots[name])
    settings.TAPEVIEW_SOURCES = (
        f"nb=nanobot:{roots['nanobot'] / 'current'},ya=yachiyo:{roots['yachiyo'] / 'data'},"
        f"ar=araliya:{roots['araliya']}"
    )
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return roots


def test_yachiyo_runs_are_phases_each_with_its_answer_and_report_no_tokens(reader, families) -> None:
    path = families["yachiyo"] / "data/session-store/sessions/sess-project-facts.json"
    doc = json.loads(path.read_text())
    tape = Tape.objects.get(source="ya", name="sess-project-facts")
    items = reader.get(f"/api/tapes/{tape.key}/phases").json()["items"]
    assert len(items) == 1 + len(doc["runs"]) and items[0]["anchor"] is None
    assert items[0]["messages"] == {"user": 1} and items[0]["entries"] == 1  # the first question
    runs = Counter()
    for p in items[1:]:
        runs.update(p["messages"])
        assert p["messages"].get("assistant") == 1  # the run's answer, after its events
    assert runs + Counter(items[0]["messages"]) == Counter(m["role"] for m in doc["messages"])
    assert [p["anchor"]["name"].split(":")[0] for p in items[1:]] == [
        f"run {n}" for n in range(1, len(doc["runs"]) + 1)
    ]
    assert all(p["tokens"] == {"prompt": None, "completion": None, "cached": None} for p in items)
    assert all(p["model"] is None for p in items)


def test_araliya_and_unarchived_nanobot_sessions_are_one_phase(reader, families) -> None:
    # The Discord session is the one whose file records an archive boundary (tests/sources/test_nanobot_phases.py).
    tapes = Tape.objects.filter(source__in=["nb", "ar"], role="tape").exclude(
        label="discord:1187654321098765432"
    )
    assert {t.source for t in tapes} == {"nb", "ar"}
    for tape in tapes:
        items = reader.get(f"/api/tapes/{tape.key}/phases").json()["items"]
        tape.refresh_from_db()
        if not tape.entries + tape.unreadable:
            assert items == [], tape.name  # an empty transcript has no phase at all
            continue
        assert len(items) == 1 and items[0]["index"] == 0 and items[0]["anchor"] is None, tape.name
        assert items[0]["entries"] == tape.entries
        assert items[0]["tokens"] == {"prompt": None, "completion": None, "cached": None}


def test_nanobot_phases_count_its_records_by_role(reader, families) -> None:
    path = next(
        (families["nanobot"] / "current/sessions").rglob("ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy.jsonl")
    )
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    messages = [r for r in records if "_type" not in r]
    plain = [
        r["role"]
        for r in messages
        if not (r["role"] == "assistant" and r.get("tool_calls")) and r["role"] != "tool"
    ]
    calls = sum(len(r["tool_calls"]) for r in messages if r["role"] == "assistant" and r.get("tool_calls"))
    tape = Tape.objects.get(source="nb", name=path.stem)
    items = reader.get(f"/api/tapes/{tape.key}/phases").json()["items"]
    roles = sum((Counter(p["messages"]) for p in items), Counter())
    assert roles == Counter(plain) and sum(p["tool_calls"] for p in items) == calls
    assert (items[0]["start_pos"], items[-1]["end_pos"]) == (1, len(records))


def test_phases_of_an_unknown_tape_are_404(reader, served) -> None:
    r = reader.get("/api/tapes/0000000000000000/phases")
    assert r.status_code == 404 and r.json() == {"detail": "no such tape"}
