"""The context preview of a tape with an entry too big to parse shows it as its size, in place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def big_tape(settings, tmp_path: Path) -> Tape:
    lines = [
        {
            "id": 1,
            "kind": "anchor",
            "payload": {"name": "session/start", "state": {}},
            "meta": {},
            "date": "2026-11-20T10:00:00+00:00",
        },
        {
            "id": 2,
            "kind": "message",
            "payload": {"role": "user", "content": "x" * 3_000_000},
            "meta": {},
            "date": "2026-11-20T10:00:01+00:00",
        },
        {
            "id": 3,
            "kind": "message",
            "payload": {"role": "assistant", "content": "noted"},
            "meta": {},
            "date": "2026-11-20T10:00:02+00:00",
        },
    ]
    (tmp_path / "big.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    settings.TAPEVIEW_SOURCES = f"big=bub:{tmp_path}"
    discovery.sync()
    return Tape.objects.get()


def test_the_context_page_shows_a_big_entry_by_its_size(viewer_client, big_tape) -> None:
    page = viewer_client.get(f"/tapes/{big_tape.key}/context")
    assert page.status_code == 200
    text = page.content.decode()
    assert "3,000,122 bytes: too big to show here" in text and "noted" in text


def test_the_context_api_lists_the_big_entry_in_place(reader, big_tape) -> None:
    body = reader.get(f"/api/tapes/{big_tape.key}/context").json()
    assert [(m["role"], m["source_pos"]) for m in body["messages"]] == [("user", 2), ("assistant", 3)]
    assert "too big to show here" in body["messages"][0]["content"]
