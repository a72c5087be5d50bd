"""The rows nanobot writes in the user's place (its hidden history: summary checkpoints, cron and
trigger turns) start no turn of the user's, and are told apart by byte span as by a whole read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tapeview.sources import nanobot
from tapeview.sources.model import AUTOMATION, CHECKPOINT

from .test_nanobot import assistant, entries, meta, user, write

CHECKPOINT_TEXT = "Continue the active task from the working-memory checkpoint above."


def session(path: Path, archived: int) -> Path:
    return write(
        path,
        meta(last_archived=archived, last_consolidated=archived),
        user("hello"),  # pos 2, message 0
        assistant("hi"),
        user(CHECKPOINT_TEXT, _hidden_history=True),  # pos 4, message 2
        user("cron", _automation_turn={"kind": "cron"}),
        assistant("report"),
        user("old cron", _cron_turn=True),
        user("/help", _command=True),
        assistant("marked", _hidden_history=True),
    )


def test_what_each_row_is_besides_a_turn(tmp_path: Path) -> None:
    found = entries(session(tmp_path / "s.jsonl", archived=2))
    assert [(e.pos, e.aside) for e in found if e.aside] == [(4, CHECKPOINT), (5, AUTOMATION), (7, AUTOMATION)]
    # The user's own rows, commands too (the user typed them), start turns; no assistant row does.
    assert [e.pos for e in found if e.starts_turn] == [2, 8]
    assert [e.pos for e in found if e.anchor_only] == [4]  # the checkpoint at the archive pointer


def test_a_checkpoint_past_the_pointer_is_no_anchor_and_still_no_turn(tmp_path: Path) -> None:
    found = {e.pos: e for e in entries(session(tmp_path / "s.jsonl", archived=0))}
    assert not found[4].anchor and not found[4].anchor_only
    assert found[4].aside == CHECKPOINT and not found[4].starts_turn


@pytest.mark.parametrize("rewritten", [False, True], ids=["as-indexed", "rewritten-since"])
def test_asides_by_span_are_the_whole_reads(tmp_path: Path, rewritten: bool) -> None:
    path = session(tmp_path / "s.jsonl", archived=2)
    spans = [(e.pos, e.offset, e.length) for e in entries(path) if e.kind == "message" and e.name == "user"]
    if rewritten:  # nanobot saved again: a longer metadata line moves every offset
        text = path.read_text()
        path.write_text(text.replace('"metadata": {}', '"metadata": {"title": "backups and more"}', 1))
    assert nanobot.asides(path, spans) == {4: CHECKPOINT, 5: AUTOMATION, 7: AUTOMATION}
