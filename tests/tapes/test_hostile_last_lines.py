"""A tape whose last entry holds what Bub's json.loads reads but orjson refuses (NaN, Infinity, a
lone surrogate escape) or an integer past 64 bits: its API, its handoff page and a handoff work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.sources import bub
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

FIRST = b'{"id": 1, "kind": "anchor", "payload": {"name": "session/start", "state": {}}, "meta": {}, "date": "2026-01-01T00:00:00+00:00"}\n'
LAST = b'{"id": 2, "kind": "event", "payload": {"name": "loop.step", "data": {"status": "ok", "value": %s}}, "meta": {}, "date": "2026-01-01T00:00:01+00:00"}\n'  # fmt: skip
VALUES = {
    "lone_surrogate": b'"\\ud800 left alone"',
    "nan": b"NaN",
    "infinity": b"-Infinity",
    "wide_integer": b"123456789012345678901234567890",
}


@pytest.fixture(params=VALUES.values(), ids=VALUES.keys())
def odd_tape(request, settings, tmp_path: Path) -> Tape:
    folder = tmp_path / "tapes"
    folder.mkdir()
    (folder / "9d11f561157e98d3__0b871d5e50e7c192.jsonl").write_bytes(FIRST + LAST % request.param)
    settings.TAPEVIEW_SOURCES = f"home=bub:{folder}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    discovery.sync()
    return Tape.objects.get()


def test_the_tape_api_answers_and_offers_a_handoff(reader, odd_tape: Tape) -> None:
    r = reader.get(f"/api/tapes/{odd_tape.key}")
    assert r.status_code == 200, r.content
    body = r.json()
    assert (body["entries"], body["unreadable"], body["handoff_wait"]) == (2, 0, "")


def test_the_handoff_page_offers_the_form(operator_client, odd_tape: Tape) -> None:
    r = operator_client.get(f"/tapes/{odd_tape.key}/handoff")
    assert r.status_code == 200
    assert 'name="summary"' in r.content.decode()


def test_a_handoff_is_written_after_the_last_entry(writer, odd_tape: Tape) -> None:
    r = writer.post(f"/api/tapes/{odd_tape.key}/handoff", {"name": "phase/next", "summary": "On."})
    assert r.status_code == 201, r.content
    assert r.json()["ids"] == [3, 4]
    lines = Path(odd_tape.path).read_bytes().splitlines()
    assert len(lines) == 4 and json.loads(lines[2])["payload"]["name"] == "phase/next"
    assert [e.id for e in bub.scan(Path(odd_tape.path))] == [1, 2, 3, 4]
