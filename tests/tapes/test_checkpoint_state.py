"""A nanobot summary checkpoint's state, as the API gives a Bub anchor's: the summary nanobot keeps
of its latest compaction (`_last_summary.text`, formats/nanobot.md §2.4), as `{"summary": ...}`."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from tapeview.sources import nanobot
from tapeview.tapes import lineage
from tapeview.tapes.models import STATE_PREVIEW

from .test_family_anchors import records, summary_tape
from .test_family_anchors_pages import demo  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

HIDDEN = "Continue the active task from the working-memory checkpoint above."


def test_the_anchors_api_gives_the_checkpoint_its_summary_as_state(reader, demo) -> None:  # noqa: F811
    tape, marker = summary_tape()
    summary = records(tape)[0]["metadata"]["_last_summary"]["text"]
    whole = orjson.dumps({"summary": summary}).decode()
    (anchor,) = reader.get(f"/api/tapes/{tape.key}/anchors").json()["items"]
    assert (anchor["name"], anchor["pos"]) == ("nanobot/summary", marker)
    assert anchor["state"] == whole[:STATE_PREVIEW]  # a bounded preview, as a Bub anchor's

    # The phases give the whole state, as they do a Bub anchor's.
    phases = reader.get(f"/api/tapes/{tape.key}/phases").json()["items"]
    assert phases[1]["anchor"] == {"name": "nanobot/summary", "pos": marker, "state": {"summary": summary}}


def line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False) + "\n"


def test_only_the_checkpoint_the_pointer_names_has_the_summary(tmp_path: Path) -> None:
    """nanobot keeps one summary, of its last compaction: an earlier checkpoint's is gone."""
    metadata = {"_type": "metadata", "key": "cli:direct", "last_archived": 4, "last_consolidated": 4}
    metadata["metadata"] = {
        "_last_summary": {"text": "- the second summary", "last_active": "2026-11-20T10:00:00"}
    }
    messages = [
        {"role": "user", "content": "one"},
        {"role": "user", "content": HIDDEN, "_hidden_history": True},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": HIDDEN, "_hidden_history": True},
        {"role": "user", "content": "three"},
    ]
    path = tmp_path / "cli_direct.jsonl"
    path.write_text("".join(line(r) for r in [metadata, *messages]), encoding="utf-8")
    marked = {e.pos: (e.anchor, e.meta.get("state")) for e in nanobot.scan(path) if e.anchor}
    assert marked == {
        3: ("nanobot/summary", None),
        6: ("nanobot/summary", {"summary": "- the second summary"}),
    }


def test_a_summary_longer_than_the_preview_is_read_whole_from_the_file(reader, demo, monkeypatch) -> None:  # noqa: F811
    tape, marker = summary_tape()
    summary = records(tape)[0]["metadata"]["_last_summary"]["text"]
    monkeypatch.setattr(lineage, "STATE_PREVIEW", 20)  # the preview kept is cut short: read from the file
    phases = reader.get(f"/api/tapes/{tape.key}/phases").json()["items"]
    assert phases[1]["anchor"]["state"] == {"summary": summary}
