"""nanobot phases: its archive pointer and summary checkpoints start them, at the rows the file names."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tapeview.sources import nanobot
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "nanobot"
SESSIONS = FIXTURES / "current/sessions/b8ca9e09c12a8b370fe81503daa78f45"
DISCORD = SESSIONS / "ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy.jsonl"
LEGACY = FIXTURES / "legacy-0.1.4/workspace/sessions"
MARKER = "Continue the active task from the working-memory checkpoint above."


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write(path: Path, rows: list[dict]) -> Path:
    """A session file as nanobot's save writes it: the whole file, one record a line."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def pointer(metadata: dict) -> int:
    return metadata.get("last_archived", metadata.get("last_consolidated"))


def marked(path: Path) -> list[tuple[int, str, int | None, str]]:
    """(pos, anchor, message index, kind) of each row that starts a phase."""
    return [(e.pos, e.anchor, e.id, e.kind) for e in nanobot.scan(path) if e.anchor]


def compacted(tmp_path: Path) -> tuple[Path, list[int]]:
    """The real Discord session as 0.3.5 compaction leaves it: two summary markers, the pointer at the second."""
    meta, *messages = records(DISCORD)
    at = [6, 14]
    for n, i in enumerate(at):
        messages.insert(
            i,
            {
                "role": "user",
                "content": MARKER,
                "_hidden_history": True,
                "timestamp": f"2026-11-12T20:00:0{n}",
            },
        )
    meta = {**meta, "last_archived": at[-1], "last_consolidated": at[-1]}
    return write(tmp_path / DISCORD.name, [meta, *messages]), at


def test_the_archive_pointer_starts_a_phase_on_the_row_it_names() -> None:
    meta = records(DISCORD)[0]
    ((pos, name, index, kind),) = marked(DISCORD)
    assert (name, index) == ("nanobot/archived", pointer(meta))
    assert kind == "tool_result"  # the row stays what it is: the result right after its call


@pytest.mark.parametrize("name", ["telegram_8123456789.jsonl", "discord_1187654321098765432.jsonl"])
def test_an_old_workspace_session_starts_a_phase_at_last_consolidated(name: str) -> None:
    meta = records(LEGACY / name)[0]
    assert [(a, i) for _, a, i, _ in marked(LEGACY / name)] == [
        ("nanobot/archived", meta["last_consolidated"])
    ]


def test_no_entry_is_added_or_changed_but_the_mark(tmp_path: Path) -> None:
    lines = DISCORD.read_bytes().splitlines(keepends=True)
    entries = list(nanobot.scan(DISCORD))
    assert [(e.offset, e.length) for e in entries] == [
        (sum(map(len, lines[:i])), len(line)) for i, line in enumerate(lines)
    ]
    assert not any(e.kind == "anchor" for e in entries)


def test_summary_checkpoints_start_phases_and_the_pointer_on_the_last_one_adds_none(tmp_path: Path) -> None:
    path, at = compacted(tmp_path)
    assert [(a, i, k) for _, a, i, k in marked(path)] == [("nanobot/summary", i, "message") for i in at]


@pytest.mark.parametrize("value", [0, -1, 10_000, True, "14", None])
def test_a_pointer_nanobot_resets_or_leaves_at_zero_starts_no_phase(tmp_path: Path, value: object) -> None:
    meta, *messages = records(DISCORD)
    path = write(
        tmp_path / "s.jsonl", [{**meta, "last_archived": value, "last_consolidated": value}, *messages]
    )
    assert marked(path) == []


def test_everything_archived_is_no_phase_past_the_last_row(tmp_path: Path) -> None:
    meta, *messages = records(DISCORD)
    n = len(messages)
    path = write(tmp_path / "s.jsonl", [{**meta, "last_archived": n, "last_consolidated": n}, *messages])
    assert marked(path) == []  # no row is there to carry it: nothing is invented


@pytest.fixture
def consolidated(db, settings, tmp_path: Path) -> Path:
    root = tmp_path / "nanobot"
    shutil.copytree(FIXTURES, root)
    settings.TAPEVIEW_SOURCES = (
        f"nb=nanobot:{root / 'current'},old=nanobot:{root / 'legacy-0.1.4' / 'workspace'}"
    )
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return root


def phases(reader, tape: Tape) -> list[dict]:
    return reader.get(f"/api/tapes/{tape.key}/phases").json()["items"]


def test_the_phases_of_a_consolidated_session_start_where_the_file_says(reader, consolidated: Path) -> None:
    path = next(consolidated.rglob(DISCORD.name))
    tape = Tape.objects.get(source="nb", name=path.stem)
    rows = records(path)
    boundary = 1 + next(i for i, r in enumerate(rows[1:], 1) if i - 1 == pointer(rows[0]))
    items = phases(reader, tape)
    assert [(p["start_pos"], p["anchor"] and p["anchor"]["name"]) for p in items] == [
        (1, None),
        (boundary, "nanobot/archived"),
    ]
    assert items[0]["end_pos"] == boundary - 1 and items[1]["end_pos"] == len(rows)
    # The row that starts a nanobot phase is a message: it is one of the phase's entries.
    assert (items[0]["entries"], items[1]["entries"]) == (boundary - 1, len(rows) - boundary + 1)


def test_old_sessions_have_their_phase_at_last_consolidated(reader, consolidated: Path) -> None:
    for name in ("telegram_8123456789.jsonl", "discord_1187654321098765432.jsonl"):
        rows = records(consolidated / "legacy-0.1.4/workspace/sessions" / name)
        tape = Tape.objects.get(source="old", name=name.removesuffix(".jsonl"))
        starts = [p["start_pos"] for p in phases(reader, tape)]
        assert starts == [1, 2 + rows[0]["last_consolidated"]], name  # the metadata line, then the messages


def test_a_rewritten_file_moves_its_phases(reader, consolidated: Path) -> None:
    path = next(consolidated.rglob(DISCORD.name))
    compacted_file, at = compacted(path.parent)
    assert compacted_file == path
    tape = Tape.objects.get(source="nb", name=path.stem)
    discovery.sync()
    items = phases(reader, tape)
    assert [p["anchor"] and p["anchor"]["name"] for p in items] == [
        None,
        "nanobot/summary",
        "nanobot/summary",
    ]
    assert [p["start_pos"] for p in items[1:]] == [2 + i for i in at]
    anchors = reader.get(f"/api/tapes/{tape.key}/anchors").json()["items"]
    assert [a["name"] for a in anchors] == ["nanobot/summary", "nanobot/summary"]  # the old one is gone


def test_the_timeline_lists_the_nanobot_phases(viewer_client, consolidated: Path) -> None:
    tape = Tape.objects.get(source="nb", name=DISCORD.stem)
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert "nanobot/archived</a>" in page
    assert "One phase: nanobot has no anchors." not in page


def test_the_context_after_a_nanobot_phase_start_begins_with_the_row_that_starts_it(
    reader, viewer_client, consolidated: Path
) -> None:
    """A summary checkpoint is a user message nanobot replays, not an anchor line: the context opens with it."""
    path = next(consolidated.rglob(DISCORD.name))
    compacted(path.parent)  # nanobot rewrote the session: two checkpoints, the pointer at the second
    tape = Tape.objects.get(source="nb", name=path.stem)
    start = phases(reader, tape)[-1]["start_pos"]
    page = viewer_client.get(f"/tapes/{tape.key}/context?anchor={start}")
    assert page.status_code == 200
    shown = re.findall(r">from #(\d+)<", page.content.decode())
    assert shown and int(shown[0]) == start
