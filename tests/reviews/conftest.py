"""A small Bub tape written for the reviews tests, configured as the only source and indexed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

MESSAGE = '{{"id": {id}, "kind": "message", "payload": {{"role": "{role}", "content": "{text}"}}, "meta": {{}}, "date": "2026-11-22T01:00:0{id}+00:00"}}\n'
ANCHOR = '{{"id": {id}, "kind": "anchor", "payload": {{"name": "{name}", "state": {{}}}}, "meta": {{}}, "date": "2026-11-22T01:00:0{id}+00:00"}}\n'


def tape_text(words: tuple[str, ...] = ("list the files", "three files", "thanks")) -> str:
    """#1 session/start, #2-#4 messages, #5 phase/review, #6 a message."""
    return (
        ANCHOR.format(id=1, name="session/start")
        + MESSAGE.format(id=2, role="user", text=words[0])
        + MESSAGE.format(id=3, role="assistant", text=words[1])
        + MESSAGE.format(id=4, role="user", text=words[2])
        + ANCHOR.format(id=5, name="phase/review")
        + MESSAGE.format(id=6, role="assistant", text="done")
    )


@pytest.fixture
def tape_file(db, settings, tmp_path: Path) -> Path:
    root = tmp_path / "tapes"
    root.mkdir()
    path = root / "a__b.jsonl"
    path.write_text(tape_text())
    settings.TAPEVIEW_SOURCES = f"t=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return path


@pytest.fixture
def tape(tape_file: Path) -> Tape:
    return Tape.objects.get(name="a__b")
