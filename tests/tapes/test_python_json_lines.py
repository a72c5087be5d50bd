"""Lines the agents' own json.loads reads and orjson does not (NaN, Infinity, a lone surrogate, an
integer past 64 bits): indexed, shown, searched and exported, never a 500, never an overflow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape
from tests.tapes.test_families import FIXTURES, NANOBOT_SESSIONS

pytestmark = pytest.mark.django_db

DATE = "2026-11-01T10:00:00+00:00"
BUB_LINES = [
    b'{"id": 1, "kind": "anchor", "payload": {"name": "session/start", "state": {}}, "meta": {}, "date": "%s"}',
    b'{"id": 2, "kind": "message", "payload": {"role": "user", "content": "lone \\ud800 surrogate"}, "meta": {}, "date": "%s"}',
    b'{"id": 3, "kind": "event", "payload": {"name": "run", "data": {"status": "ok", "usage": {"total_tokens": 18446744073709551616, "prompt_tokens": 9223372036854775807}}}, "meta": {}, "date": "%s"}',
    b'{"id": 4, "kind": "event", "payload": {"name": "run", "data": {"status": "ok", "v": NaN, "w": -Infinity, "usage": {"total_tokens": 30, "prompt_tokens": 20}}}, "meta": {}, "date": "%s"}',
    b'{"id": 5, "kind": "tool_result", "payload": {"results": [123456789012345678901234567890]}, "meta": {}, "date": "%s"}',
    b'{"id": 36893488147419103232, "kind": "message", "payload": {"role": "user", "content": "x"}, "meta": {}, "date": "%s"}',
]
NANOBOT_LINE = b'{"role": "user", "content": "lone \\ud800 here", "n": -9223372036854775809, "x": NaN}\n'


@pytest.fixture
def sources(settings, tmp_path: Path) -> dict[str, Path]:
    bub = tmp_path / "bub"
    bub.mkdir()
    tape = bub / "a1b2c3d4e5f60718__0123456789abcdef.jsonl"
    tape.write_bytes(b"".join(line.replace(b"%s", DATE.encode()) + b"\n" for line in BUB_LINES))
    nano = tmp_path / "nanobot"
    shutil.copytree(FIXTURES / "nanobot", nano)
    session = nano / NANOBOT_SESSIONS / "dGVsZWdyYW06ODEyMzQ1Njc4OQ.jsonl"
    session.write_bytes(session.read_bytes() + NANOBOT_LINE)
    settings.TAPEVIEW_SOURCES = f"b=bub:{bub},nb={nano / 'current'}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return {"bub": tape, "nanobot": session}


def pages_of(tape: Tape) -> list[str]:
    return [
        f"/tapes/{tape.key}/",
        f"/tapes/{tape.key}/?end=1",
        f"/tapes/{tape.key}/context",
        f"/api/tapes/{tape.key}/entries?limit=500",
        f"/tapes/{tape.key}/export.jsonl",
        f"/tapes/{tape.key}/export.md",
    ]


def test_a_bub_tape_of_such_lines_reads_as_bub_reads_it(viewer_client, sources) -> None:
    tape = Tape.objects.get(source="b")
    # Five entries as Bub reads them; the id past 64 bits is not an id Tapeview can keep.
    assert (tape.entries, tape.unreadable, tape.anchors) == (5, 1, 1)
    # A token count past 2**40 is no count: only the plausible run adds up.
    assert tape.tokens == 30
    page = viewer_client.get(f"/tapes/{tape.key}/?end=1").content.decode()
    assert "lone \ufffd surrogate" in page
    assert "123456789012345678901234567890" in page
    entries = viewer_client.get(f"/api/tapes/{tape.key}/entries?limit=500").json()
    assert [e["kind"] for e in entries["items"]][:5] == ["anchor", "message", "event", "event", "tool_result"]
    for url in pages_of(tape):
        assert viewer_client.get(url).status_code == 200, url
    found = viewer_client.get("/search/?q=surrogate").content.decode()
    assert "surrogate" in found and tape.label in found


def test_a_nanobot_session_with_such_a_record_reads_as_nanobot_reads_it(viewer_client, sources) -> None:
    tape = Tape.objects.get(source="nb", label="telegram:8123456789")
    entries = viewer_client.get(f"/api/tapes/{tape.key}/entries?limit=500").json()["items"]
    last = entries[-1]
    assert last["kind"] == "message" and last["payload"]["content"] == "lone \ufffd here"
    assert last["payload"]["n"] == json.loads(NANOBOT_LINE)["n"]  # exact, not a float
    for url in pages_of(tape):
        assert viewer_client.get(url).status_code == 200, url


def test_a_nul_character_anywhere_in_a_bub_tape_is_indexed_shown_and_searched(
    viewer_client, settings, tmp_path
) -> None:
    """JSON may escape U+0000 anywhere; PostgreSQL's text cannot hold it (names, models, search text)."""
    folder = tmp_path / "nul"
    folder.mkdir()
    lines = [
        {"id": 1, "kind": "anchor", "payload": {"name": "phase\u0000one", "state": {"k\u0000": "v\u0000"}}},
        {"id": 2, "kind": "event", "payload": {"name": "loop.start", "data": {"model": "m\u0000odel"}}},
        {"id": 3, "kind": "message", "payload": {"role": "us\u0000er", "content": "needle\u0000haystack"}},
        {
            "id": 4,
            "kind": "event",
            "payload": {
                "name": "run",
                "data": {"status": "ok", "model": "m\u0000", "usage": {"total_tokens": 5}},
            },
        },
        {"id": 5, "kind": "event", "payload": {"name": "bad\u0000.error", "data": {}}},
    ]
    tape_path = folder / "a1b2c3d4e5f60718__0123456789abcdef.jsonl"
    tape_path.write_text(
        "".join(json.dumps({**x, "meta": {}, "date": DATE}) + "\n" for x in lines), encoding="utf-8"
    )
    settings.TAPEVIEW_SOURCES = f"nul=bub:{folder}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    tape = Tape.objects.get(source="nul")
    assert (tape.entries, tape.anchors, tape.errors, tape.tokens) == (5, 1, 1, 5)
    for url in [*pages_of(tape), "/", "/search/?q=needle"]:
        assert viewer_client.get(url).status_code == 200, url
    assert "needle" in viewer_client.get(f"/tapes/{tape.key}/?end=1").content.decode()
