"""Readers report the token usage a family records: Bub's runs, nanobot's last turn; none elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.sources import araliya, bub, nanobot, yachiyo

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SESSIONS = FIXTURES / "nanobot/current/sessions/b8ca9e09c12a8b370fe81503daa78f45"


def test_nanobot_metadata_reports_its_last_turns_usage() -> None:
    path = SESSIONS / "ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy.jsonl"
    usage = json.loads(path.read_text().split("\n", 1)[0])["metadata"]["_last_usage"]
    metadata = next(e for e in nanobot.scan(path) if e.kind == "metadata")
    assert (metadata.tokens, metadata.prompt_tokens, metadata.cached_tokens) == (33195, 32984, 26387)
    assert metadata.tokens == usage["total_tokens"] and metadata.reports_usage
    assert not any(e.reports_usage for e in nanobot.scan(path) if e.kind != "metadata")


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        ({"input_tokens": 100, "output_tokens": 20}, 120),  # no total: the two parts
        ({"total_tokens": 7}, 7),
        ({"total_tokens": "many"}, 0),
        ({"total_tokens": True}, 0),
        ({}, 0),
    ],
)
def test_nanobot_usage_without_a_total_adds_its_parts(tmp_path: Path, usage: dict, tokens: int) -> None:
    path = tmp_path / "s.jsonl"
    record = {"_type": "metadata", "key": "cli:x", "metadata": {"_last_usage": usage}, "last_archived": 0}
    path.write_text(json.dumps(record) + "\n")
    assert next(nanobot.scan(path)).tokens == tokens


def test_a_nanobot_session_without_usage_reports_none() -> None:
    path = FIXTURES / "nanobot/legacy-0.1.4/workspace/sessions/discord_1187654321098765432.jsonl"
    assert not any(e.reports_usage for e in nanobot.scan(path))


def test_bub_reports_usage_on_its_run_events_only() -> None:
    entries = list(bub.scan(FIXTURES / "bub/session_realistic.jsonl"))
    reporting = [e for e in entries if e.reports_usage]
    assert reporting and all(e.kind == "event" and e.name == "run" for e in reporting)
    assert sum(e.tokens for e in reporting) == 38856


@pytest.mark.parametrize(
    ("module", "path"),
    [
        (yachiyo, "yachiyo/data/session-store/sessions/sess-project-facts.json"),
        (
            araliya,
            "araliya/bot-pkey51aee87e/memory/sessions/01a200e4-e18d-7ffd-b1d0-f7592c930f76/transcript.md",
        ),
    ],
)
def test_yachiyo_and_araliya_record_no_usage(module, path: str) -> None:
    entries = list(module.scan(FIXTURES / path))
    assert entries and not any(e.reports_usage for e in entries)
