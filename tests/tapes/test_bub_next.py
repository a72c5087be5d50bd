"""Tapes in Bub's next format in the index, on their pages and in the API, beside 0.5.1 tapes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .next_tapes import OLD, RESET, SESSION, make_home

pytestmark = pytest.mark.django_db


@pytest.fixture
def next_home(settings, tmp_path: Path) -> Path:
    root = make_home(tmp_path / "tapes")
    settings.TAPEVIEW_SOURCES = f"home=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return root


def tape(name: str) -> Tape:
    return Tape.objects.get(name=name)


def test_the_index_counts_what_bubs_reader_counts(next_home) -> None:
    t = tape(SESSION)
    assert (t.entries, t.unreadable, t.anchors, t.errors) == (169, 0, 4, 4)
    assert t.last_anchor == "phase/implement" and t.line_format == "bub-next"
    assert t.label == "cli:local"
    assert t.last_prompt_tokens == 2_460 and t.last_cached_tokens == 2_304
    assert t.model == "openrouter:anthropic/claude-sonnet-4.5"
    sidecar = tape(f"{SESSION}__sidecar__spill")
    assert (sidecar.entries, sidecar.anchors, sidecar.role) == (10, 5, "sidecar")
    assert (tape(RESET).entries, tape(RESET).anchors) == (16, 1)
    archive = Tape.objects.get(role="archive", name__startswith=f"{RESET}.jsonl")
    assert (archive.entries, archive.anchors) == (31, 1)


def test_the_api_gives_the_counts_and_the_label(reader, next_home) -> None:
    body = reader.get(f"/api/tapes/{tape(SESSION).key}").json()
    assert (body["entries"], body["anchors"], body["errors"], body["unreadable"]) == (169, 4, 4, 0)
    assert body["label"] == "cli:local" and body["line_format"] == "bub-next"
    assert body["format_note"] == ""


def test_a_0_5_1_tape_beside_next_ones_says_bubs_new_release_cannot_append(
    viewer_client, reader, next_home
) -> None:
    old = tape(OLD)
    assert old.line_format == "0.5.1" and old.entries > 0 and old.unreadable == 0
    body = reader.get(f"/api/tapes/{old.key}").json()
    assert body["format_note"].startswith("Bub's new release cannot append to this tape")
    page = viewer_client.get(f"/tapes/{old.key}/").content.decode()
    assert "Bub&#x27;s new release cannot append to this tape" in page
    assert "cannot append" not in viewer_client.get(f"/tapes/{tape(SESSION).key}/").content.decode()


def test_a_tape_with_one_line_of_the_other_format_says_which_line(reader, next_home) -> None:
    old_line = (next_home / f"{OLD}.jsonl").read_bytes().splitlines(keepends=True)[0]
    with (next_home / f"{SESSION}.jsonl").open("ab") as f:
        f.write(old_line)
    new_line = (next_home / f"{SESSION}.jsonl").read_bytes().splitlines(keepends=True)[0]
    with (next_home / f"{OLD}.jsonl").open("ab") as f:
        f.write(new_line)
    discovery.sync()
    mixed, old = tape(SESSION), tape(OLD)
    assert (mixed.entries, mixed.unreadable, mixed.foreign_line) == (169, 1, 170)
    note = reader.get(f"/api/tapes/{mixed.key}").json()["format_note"]
    assert note.startswith("Line 170 is written in Bub 0.5.1's format") and "refuses this whole tape" in note
    assert old.foreign_line == old.entries + 1
    note = reader.get(f"/api/tapes/{old.key}").json()["format_note"]
    assert note.startswith(f"Line {old.foreign_line} is written in Bub's next format")
    entry = reader.get(f"/api/tapes/{mixed.key}/entries/170").json()
    assert entry["readable"] is False and "Bub 0.5.1's format" in entry["problem"]


def turns_of(html: str) -> list[str]:
    return re.findall(r'aria-label="(Turn \d+(?: \(continued\))?)"', html)


def test_the_timeline_groups_turns_by_the_loop_and_pairs_calls_with_their_results(
    viewer_client, next_home
) -> None:
    key = tape(SESSION).key
    html = "".join(
        viewer_client.get(f"/tapes/{key}/?after={at}").content.decode() for at in (0, 50, 100, 150)
    )
    turns = turns_of(html)
    # 9 loop turns and 2 comma commands; the anchors made in a turn continue it after them
    assert [t for t in turns if "continued" not in t] == [f"Turn {n}" for n in range(1, 12)]
    assert "phase/explore-done" in html and "auto_handoff/context_overflow" in html
    # the failing `git log` call shows its error beside its call, from the same agent step
    assert "git log --oneline -3" in html and "not a git repository" in html
    assert "Tool `run_tests` does not exist" in html


def test_the_context_preview_shows_what_bub_sends_after_the_anchor(viewer_client, next_home) -> None:
    t = tape(SESSION)
    html = viewer_client.get(f"/tapes/{t.key}/context?anchor=phase/explore-done").content.decode()
    assert "Continue the task until all targets are completed" in html
    assert "&lt;general_instruct&gt;" not in html  # the system prompt is no context line (bubcontext false)
    assert "rules of Bub&#x27;s next release" in html or "rules of Bub's next release" in html


def test_search_finds_words_of_a_next_tape_with_their_kind(next_home) -> None:
    from tapeview.search import catchup, engine

    catchup.catch_up()
    t = tape(SESSION)
    hits = engine.search("naive", tape_key=t.key, limit=50)
    assert "tool_call" in {h.kind for h in hits}  # the fs_read result inside the agent step
    anchors = engine.search("explore", tape_key=t.key, limit=50)
    assert any(h.kind == "anchor" for h in anchors)


def test_the_markdown_export_shows_a_steps_calls_with_their_results(viewer_client, next_home) -> None:
    t = tape(SESSION)
    text = b"".join(viewer_client.get(f"/tapes/{t.key}/export.md").streaming_content).decode()
    assert "**fs_read** (toolu_02Parse)" in text and "not a git repository" in text
    assert "**failed** (toolu_02GitLg)" in text
    raw = b"".join(viewer_client.get(f"/tapes/{t.key}/export.jsonl").streaming_content)
    assert raw == (next_home / f"{SESSION}.jsonl").read_bytes()
