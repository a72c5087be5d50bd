"""Tape lines nested deeper than orjson writes (254 levels) or Python's json recurses (~1,000), as a
hand-made or hostile line can be (orjson reads 1,024): every page and answer about them works."""

from __future__ import annotations

from pathlib import Path

import pytest

from tapeview.sources import parse_sources
from tapeview.tapes import discovery
from tapeview.tapes.models import Anchor, Tape

pytestmark = pytest.mark.django_db

DATE = "2026-11-22T01:00:00+00:00"
LEVELS = (100, 300, 1000)


def nested(levels: int) -> str:
    return '{"a": ' * levels + '"bottom"' + "}" * levels


@pytest.fixture
def deep_tape(tmp_path: Path, settings) -> tuple[Tape, bytes]:
    lines = [
        f'{{"id": 1, "kind": "anchor", "payload": {{"name": "session/start", "state": {nested(1000)}}}, "date": "{DATE}"}}'
    ]
    for levels in LEVELS:
        n = len(lines) + 1
        lines.append(
            f'{{"id": {n}, "kind": "message", "payload": {{"role": "user", "content": "deep{levels}", "x": {nested(levels)}}}, "meta": {{}}, "date": "{DATE}"}}'
        )
        lines.append(
            f'{{"id": {n + 1}, "kind": "event", "payload": {{"name": "deep.{levels}", "data": {nested(levels)}}}, "meta": {{}}, "date": "{DATE}"}}'
        )
    text = ("\n".join(lines) + "\n").encode()
    (tmp_path / "a__b.jsonl").write_bytes(text)
    settings.TAPEVIEW_SOURCES = f"t=bub:{tmp_path}"
    discovery.sync(parse_sources([settings.TAPEVIEW_SOURCES]))
    return Tape.objects.get(), text


def test_deep_lines_are_indexed_as_entries(deep_tape) -> None:
    tape, _ = deep_tape
    assert (tape.entries, tape.unreadable, tape.anchors, tape.problem) == (7, 0, 1, "")
    state = Anchor.objects.get(tape=tape).state
    assert state.startswith('{"a":{"a":') and len(state) == 300


def test_the_timeline_shows_them_again_and_again(deep_tape, viewer_client) -> None:
    tape, _ = deep_tape
    for _ in range(2):  # the second answer is the page kept from the first, where it can be kept
        page = viewer_client.get(f"/tapes/{tape.key}/")
        assert page.status_code == 200
        assert all(f"deep.{levels}" in page.content.decode() for levels in LEVELS)


@pytest.mark.parametrize("pos", range(1, 8))
def test_each_entry_page_shows_its_payload_and_its_raw_line(deep_tape, viewer_client, pos: int) -> None:
    tape, text = deep_tape
    page = viewer_client.get(f"/tapes/{tape.key}/entries/{pos}/")
    assert page.status_code == 200
    shown = page.content.decode()
    assert ("nested deeper: see the raw line" in shown) == (pos in (1, 4, 5, 6, 7))
    raw = viewer_client.get(f"/tapes/{tape.key}/entries/{pos}/raw")
    assert b"".join(raw.streaming_content) == text.splitlines(keepends=True)[pos - 1]


def test_the_api_gives_payloads_it_can_hold_and_previews_of_the_others(deep_tape, reader) -> None:
    tape, _ = deep_tape
    for full in ("false", "true"):
        items = reader.get(f"/api/tapes/{tape.key}/entries?full={full}").json()["items"]
        whole = {item["pos"]: item["payload"] is not None for item in items}
        assert whole == {1: False, 2: True, 3: True, 4: False, 5: False, 6: False, 7: False}
        deepest = items[-1]
        assert deepest["truncated"] and deepest["preview"].startswith('{"name":"deep.1000","data":{"a":{"a":')
    one = reader.get(f"/api/tapes/{tape.key}/entries/6")
    assert one.status_code == 200 and one.json()["truncated"] and one.json()["payload"] is None


def test_context_export_and_search_answer(deep_tape, viewer_client) -> None:
    tape, text = deep_tape
    assert viewer_client.get(f"/tapes/{tape.key}/context").status_code == 200
    export = viewer_client.get(f"/tapes/{tape.key}/export.jsonl")
    assert export.status_code == 200 and b"".join(export.streaming_content) == text
    found = viewer_client.get("/search/?q=deep1000")
    assert found.status_code == 200 and "deep1000" in found.content.decode()
