"""One story about anchors per family: what the session index, the timeline, the API, the context
page and the handoff page say of a nanobot summary checkpoint and of yachiyo's runs agrees."""

from __future__ import annotations

import importlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.apps import apps

from tapeview.demodata import nanobot as nanobot_demo
from tapeview.demodata import yachiyo as yachiyo_demo
from tapeview.tapes import discovery, index
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 24, 17, 0, tzinfo=UTC)
DISCORD = "discord:1290457781234567890"  # the demo's session with a summary checkpoint


@pytest.fixture
def demo(settings, tmp_path: Path) -> dict[str, Path]:
    roots = {"nanobot": tmp_path / "nanobot", "yachiyo": tmp_path / "yachiyo"}
    nanobot_demo.write(roots["nanobot"], NOW)
    yachiyo_demo.write(roots["yachiyo"], NOW)
    settings.TAPEVIEW_SOURCES = f"nb=nanobot:{roots['nanobot']},ya=yachiyo:{roots['yachiyo']}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return roots


def records(tape: Tape) -> list[dict]:
    return [json.loads(line) for line in Path(tape.path).read_bytes().split(b"\n") if line.strip()]


def summary_tape() -> tuple[Tape, int]:
    """The demo's nanobot session with a summary checkpoint, and the checkpoint's position."""
    tape = Tape.objects.get(source="nb", label=DISCORD)
    marker = next(pos for pos, r in enumerate(records(tape), 1) if r.get("_hidden_history"))
    return tape, marker


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_a_summary_checkpoint_is_the_anchor_the_index_timeline_and_api_count(
    viewer_client, reader, demo
) -> None:
    tape, marker = summary_tape()
    since = len(records(tape)) - marker  # the rows after the checkpoint
    shown = reader.get(f"/api/tapes/{tape.key}").json()
    assert (shown["anchors"], shown["last_anchor"], shown["entries_since_anchor"]) == (
        1,
        "nanobot/summary",
        since,
    )
    listed = next(t for t in reader.get("/api/tapes", limit=100).json()["items"] if t["id"] == tape.key)
    assert (listed["anchors"], listed["last_anchor"]) == (1, "nanobot/summary")
    anchors = reader.get(f"/api/tapes/{tape.key}/anchors").json()["items"]
    assert [(a["name"], a["pos"]) for a in anchors] == [("nanobot/summary", marker)]

    row = re.search(
        rf'<tr>\s*<td class="label"><a href="/tapes/{tape.key}/".*?</tr>', _index(viewer_client), re.S
    )
    assert row, "the session is on the index"
    cells = text(row[0])
    assert "nanobot/summary" in cells and f" {since} " in cells

    timeline = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert re.search(r'id="count-anchors"[^>]*>1<', timeline)
    assert re.search(rf'id="count-since"[^>]*>{since}<', timeline)
    assert "Context since <em>nanobot/summary</em>" in timeline
    assert "the start of the tape" not in text(timeline)


def _index(client) -> str:
    return client.get("/?source=nb").content.decode()


def test_the_context_page_counts_the_reported_tokens_after_the_checkpoint(viewer_client, demo) -> None:
    tape, marker = summary_tape()
    prompt = records(tape)[0]["metadata"]["_last_usage"]["input_tokens"]  # a turn after the checkpoint
    page = viewer_client.get(f"/tapes/{tape.key}/context").content.decode()
    assert f"after <em>nanobot/summary</em> <small>#{marker}</small>" in page
    tokens = text(re.search(r'<dd id="token-count">.*?</dd>', page, re.S)[0])
    assert f"{prompt:,}" in tokens and "the agent's last report since this anchor" in tokens.replace(
        "&#x27;", "'"
    )
    assert "cut by later anchors" not in tokens


def test_usage_saved_by_the_compaction_itself_is_not_this_contexts(viewer_client, demo) -> None:
    """nanobot saves when it inserts a checkpoint: the usage in that file is of the turn before the cut."""
    tape, marker = summary_tape()
    rows = records(tape)[:marker]  # the file as compaction left it, before the next turn
    Path(tape.path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    page = viewer_client.get(f"/tapes/{tape.key}/context").content.decode()
    tokens = text(re.search(r'<dd id="token-count">.*?</dd>', page, re.S)[0]).replace("&#x27;", "'")
    assert "the agent reported none since this anchor" in tokens
    assert Tape.objects.get(pk=tape.pk).context_tokens is None


def test_a_nanobot_phase_takes_its_time_from_its_messages_not_the_files_save(reader, demo) -> None:
    tape, marker = summary_tape()
    rows = records(tape)
    lead, after = reader.get(f"/api/tapes/{tape.key}/phases").json()["items"]
    # The metadata record's updated_at is the last save, after every message: no phase ends there.
    last_before = datetime.fromisoformat(rows[marker - 2]["timestamp"]).astimezone()
    assert datetime.fromisoformat(lead["ended_at"]) == last_before
    assert lead["ended_at"] < after["started_at"]


def test_the_context_page_names_nanobots_rules(viewer_client, demo) -> None:
    tape, _ = summary_tape()
    rules = text(
        re.search(
            r'id="context-rules">.*?</p>',
            viewer_client.get(f"/tapes/{tape.key}/context").content.decode(),
            re.S,
        )[0]
    )
    assert "nanobot&#x27;s rules" in rules or "nanobot's rules" in rules
    assert "Bub" not in rules


def test_the_context_page_of_a_yachiyo_run_says_its_system_prompt_is_shown(viewer_client, demo) -> None:
    tape = next(t for t in Tape.objects.filter(source="ya") if t.anchors)
    page = viewer_client.get(f"/tapes/{tape.key}/context").content.decode()
    rules = text(re.search(r'id="context-rules">.*?</p>', page, re.S)[0])
    assert "yachiyo" in rules and "Bub" not in rules
    assert 'class="ctx-msg role-system"' in page  # yachiyo recorded its prompt: the system messages are there
    assert "not part of the tape" not in rules and "system messages" in rules


def test_the_handoff_page_does_not_deny_the_anchors_the_header_counts(operator_client, reader, demo) -> None:
    nano, _ = summary_tape()
    ya = next(t for t in Tape.objects.filter(source="ya") if t.anchors > 1)
    for tape in (nano, ya):
        page = text(operator_client.get(f"/tapes/{tape.key}/handoff").content.decode())
        assert "No handoff here." in page and "take no handoff" in page
        assert "no anchors" not in page, tape.kind
        assert "no anchors" not in reader.get(f"/api/tapes/{tape.key}").json()["handoff_refusal"]


def test_an_idle_bub_tape_says_so_once(operator_client, served, settings) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 0
    tape = Tape.objects.get(label="telegram:-1001234567890")
    page = text(operator_client.get(f"/tapes/{tape.key}/handoff").content.decode())
    assert "The tape is idle:" in page and "idle: idle" not in page


def test_an_index_made_before_nanobot_anchors_counted_is_read_again(reader, demo) -> None:
    tape, marker = summary_tape()
    # As an earlier version left it: the checkpoint a phase start only.
    Tape.objects.filter(pk=tape.pk).update(
        anchors=0, last_anchor="", last_anchor_pos=None, entries_since_anchor=19
    )
    migration = importlib.import_module("tapeview.tapes.migrations.0015_nanobot_anchors")
    migration.reread_nanobot(apps, None)
    index.refresh(Tape.objects.get(pk=tape.pk))
    shown = reader.get(f"/api/tapes/{tape.key}").json()
    assert (shown["anchors"], shown["last_anchor"]) == (1, "nanobot/summary")
    assert Tape.objects.get(pk=tape.pk).last_anchor_pos == marker


def test_a_checkpoint_past_the_archive_pointer_cuts_nothing(tmp_path: Path) -> None:
    """A pointer nanobot resets (here, one past the messages) replays from the start: the marker
    is then a plain user message, not an anchor."""
    from tapeview.sources import nanobot

    nanobot_demo.write(tmp_path, NOW)
    path = next(p for p in tmp_path.rglob("*.jsonl") if b"_hidden_history" in p.read_bytes())
    rows = [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]
    assert [e.anchor for e in nanobot.scan(path) if e.anchor] == ["nanobot/summary"]
    rows[0] = {**rows[0], "last_archived": 10_000, "last_consolidated": 10_000}
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert [e.anchor for e in nanobot.scan(path) if e.anchor] == []
