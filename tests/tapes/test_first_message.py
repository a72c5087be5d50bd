"""A yachiyo session's label is its title, cut at 40 characters; hovering it shows the whole first message."""

from __future__ import annotations

import html
import importlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from django.apps import apps

from tapeview.sources import yachiyo
from tapeview.sources.model import Entry
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SESSION = "data/session-store/sessions/sess-project-facts.json"


@pytest.fixture
def data(settings, tmp_path: Path) -> Path:
    """yachiyo's samples beside a Bub tape, indexed."""
    shutil.copytree(FIXTURES / "yachiyo" / "data", tmp_path / "data")
    (tmp_path / "bub").mkdir()
    shutil.copy(FIXTURES / "bub" / "session_realistic.jsonl", tmp_path / "bub")
    settings.TAPEVIEW_SOURCES = f"ya=yachiyo:{tmp_path / 'data'},b=bub:{tmp_path / 'bub'}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return tmp_path


def hovers(client) -> dict[str, str]:
    """Each session index label's text, and the title shown when hovering it."""
    page = client.get("/?sort=label").content.decode()
    found = re.findall(r'<td class="label"><a [^>]*title="([^"]*)">([^<]*)</a>', page)
    return {html.unescape(text): html.unescape(title) for title, text in found}


def rewrite_first_message(path: Path, text: str) -> None:
    doc = json.loads(path.read_text())
    next(m for m in doc["messages"] if m["role"] == "user")["content"] = text
    path.write_text(json.dumps(doc, indent=2))
    os.utime(path, ns=(path.stat().st_mtime_ns + 10**9,) * 2)  # a rewrite within the same tick


def test_hovering_a_cut_label_shows_the_whole_first_message(viewer_client, data) -> None:
    shown = hovers(viewer_client)
    label = "Please remember these project facts (bat… · sess-project-facts"
    assert shown[label] == "Please remember these project facts (batch 1)."
    assert shown['Remember that my password hint is "blue … · sess-low-permission'] == (
        'Remember that my password hint is "blue dog".'
    )


def test_a_long_first_message_is_shown_up_to_300_characters(viewer_client, data) -> None:
    rewrite_first_message(data / SESSION, "  " + "word " * 100)
    discovery.sync()
    title = hovers(viewer_client)["Please remember these project facts (bat… · sess-project-facts"]
    assert title == ("word " * 60)[:299] + "…" and len(title) == 300


def test_a_session_rewritten_with_another_first_message_shows_the_new_one(viewer_client, data) -> None:
    rewrite_first_message(data / SESSION, "Forget the facts; remember the weather.")
    discovery.sync()
    assert "Forget the facts; remember the weather." in hovers(viewer_client).values()


def test_other_families_hover_their_label(viewer_client, data) -> None:
    bub = Tape.objects.get(kind="bub", owner__isnull=True)
    assert bub.first_message == "" and hovers(viewer_client)[bub.label] == bub.label


def test_the_migration_reads_yachiyo_sessions_again_and_fills_their_first_message(data) -> None:
    Tape.objects.update(first_message="")  # as a session indexed before the field existed
    migration = importlib.import_module("tapeview.tapes.migrations.0019_tape_first_message")
    migration.reread_yachiyo(apps, None)
    assert not Tape.objects.filter(kind="yachiyo").exclude(indexed_at=None).exists()
    assert not Tape.objects.filter(kind="bub", indexed_at=None).exists()
    discovery.sync()
    facts = Tape.objects.get(name="sess-project-facts")
    assert facts.first_message == "Please remember these project facts (batch 1)."


def user(text: str) -> Entry:
    return Entry(1, 0, 0, None, "message", name="user", payload={"role": "user", "content": text})


@pytest.mark.parametrize(
    ("entry", "first"),
    [
        (user("  whole and trimmed \n"), "whole and trimmed"),
        (user("x" * 300), "x" * 300),
        (user("x" * 301), "x" * 299 + "…"),
        (user("   "), None),
        (Entry(1, 0, 0, None, "message", name="assistant", payload={"content": "hi"}), None),
        (Entry(1, 0, 0, None, "message", name="user", payload={"content": ["not", "text"]}), None),
    ],
)
def test_the_first_message_is_a_user_messages_text_bounded(entry: Entry, first: str | None) -> None:
    assert yachiyo.first_message(entry) == first
