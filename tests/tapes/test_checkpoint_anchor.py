"""A nanobot summary checkpoint as the tape page shows it beside a Bub anchor: the phase it starts
counts the entries the header says follow it, and the anchors-only timeline draws it as an anchor."""

from __future__ import annotations

import importlib
import re

import pytest
from django.apps import apps

from tapeview.tapes import index
from tapeview.tapes.models import Anchor, Tape

from .operator_sources import serve
from .test_family_anchors import records, summary_tape, text
from .test_family_anchors_pages import demo  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("tapeview.tapes.migrations.0018_nanobot_checkpoint_phases")


def phase_counts(html: str) -> dict[int, int]:
    """The phase table's rows: each phase's index and the entries it says it holds."""
    rows = re.findall(r'<tr data-index="(\d+)".*?title="entries in this phase">(\d+)<', html, re.S)
    return {int(index): int(entries) for index, entries in rows}


def test_the_checkpoints_phase_holds_the_entries_the_header_says_follow_it(
    viewer_client,
    reader,
    demo,  # noqa: F811
) -> None:
    tape, marker = summary_tape()
    rows = records(tape)
    since = len(rows) - marker  # the rows after the checkpoint, not the checkpoint itself
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert re.search(rf'id="count-since"[^>]*>{since}<', page)
    assert phase_counts(page) == {0: marker - 1, 1: since}

    phases = reader.get(f"/api/tapes/{tape.key}/phases").json()["items"]
    assert [p["entries"] for p in phases] == [marker - 1, since]
    users = sum(1 for r in rows[marker:] if r["role"] == "user")  # the checkpoint is no chat turn
    assert phases[1]["messages"]["user"] == users
    anchors = reader.get(f"/api/tapes/{tape.key}/anchors").json()["items"]
    assert [(a["name"], a["entries"]) for a in anchors] == [("nanobot/summary", since)]
    assert reader.get(f"/api/tapes/{tape.key}").json()["entries_since_anchor"] == since


def test_an_index_that_counted_the_checkpoint_in_its_phase_is_read_again(viewer_client, demo) -> None:  # noqa: F811
    tape, marker = summary_tape()
    since = len(records(tape)) - marker
    Anchor.objects.filter(tape=tape).update(entries=since + 1)  # as an earlier version counted it
    MIGRATION.reread_checkpoints(apps, None)
    index.refresh(Tape.objects.get(pk=tape.pk))
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert phase_counts(page) == {0: marker - 1, 1: since}


def card(html: str, pos: int) -> str:
    """The card of the entry at `pos` on a timeline page, and what is drawn just before it."""
    found = re.search(
        rf'(?:<div class="anchor phase" role.*?)?<(article|div) class="[^"]*" id="e{pos}".*?</\1>', html, re.S
    )
    assert found, f"#{pos} is on the page"
    return found[0]


def said(summary: str) -> str:
    """The first point of a checkpoint's summary, as words."""
    return next(line for line in summary.splitlines() if line.startswith("- "))[2:].split(";")[0]


def test_the_anchors_timeline_draws_a_checkpoint_as_an_anchor_with_its_summary(
    viewer_client,
    demo,  # noqa: F811
) -> None:
    tape, marker = summary_tape()
    summary = records(tape)[0]["metadata"]["_last_summary"]["text"]  # the last compaction's
    only = card(viewer_client.get(f"/tapes/{tape.key}/", {"anchors": 1}).content.decode(), marker)
    assert only.startswith(
        f'<div class="anchor phase" id="e{marker}" role="group" aria-label="anchor nanobot/summary">'
    )
    shown = text(only)
    assert f"#{marker} ⚓ nanobot/summary" in shown
    assert summary.splitlines()[0] in shown and said(summary) in shown
    assert "in the timeline" in shown and "export segment: JSONL · Markdown" in shown
    assert "Continue the active task" not in shown  # the hidden row nanobot replays is not the anchor


def test_the_timeline_keeps_the_checkpoint_row_under_its_anchor_with_the_summary(
    viewer_client,
    demo,  # noqa: F811
) -> None:
    tape, marker = summary_tape()
    summary = records(tape)[0]["metadata"]["_last_summary"]["text"]
    drawn = card(viewer_client.get(f"/tapes/{tape.key}/", {"at": marker}).content.decode(), marker)
    shown = text(drawn)
    assert "⚓ nanobot/summary context after · consolidated into memory up to here" in shown
    assert f'<article class="entry k-message n-user target" id="e{marker}">' in drawn
    assert "this summary stands for what came before" in shown
    assert said(summary) in shown  # drawn as Markdown
    assert "Continue the active task from the working-memory checkpoint above." in shown


def test_the_message_the_archive_pointer_names_is_one_of_the_entries_since_it(
    viewer_client, reader, settings, tmp_path
) -> None:
    """Real sessions of both nanobot versions: the row their pointer names stays a message of the
    context, so the header, the phase table and the API count it alike."""
    serve(settings, tmp_path)
    tapes = Tape.objects.filter(kind="nanobot", anchor_rows__name="nanobot/archived").distinct()
    assert {t.source for t in tapes} == {"nb", "old"}
    for tape in tapes:
        (held,) = Anchor.objects.filter(tape=tape).values_list("pos", flat=True)
        since = tape.entries - held + 1  # the named row and every row after it
        page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
        assert re.search(rf'id="count-since"[^>]*>{since}<', page), tape.label
        # Its link lists them: the named row first.
        (link,) = re.findall(r'href="([^"]+)" id="count-since"', page)
        listed = viewer_client.get(link.replace("&amp;", "&")).content.decode()
        assert re.findall(r'<(?:article|div) class="[^"]*" id="e(\d+)"', listed)[0] == str(held)
        assert phase_counts(page)[1] == since
        assert reader.get(f"/api/tapes/{tape.key}").json()["entries_since_anchor"] == since
        anchors = reader.get(f"/api/tapes/{tape.key}/anchors").json()["items"]
        assert [(a["name"], a["entries"]) for a in anchors] == [("nanobot/archived", since)]
