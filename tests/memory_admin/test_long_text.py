"""A memory file far past what an agent keeps (a pasted log): its pages stay bounded, as a tape's do,
and say where the rest is."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from memory_admin.blame import BLAMED
from memory_admin.kinds.nanobot import SHOWN
from memory_admin.models import MemoryStore
from memory_admin.stores import nanobot_memory
from memory_admin.stores.model import MAX_TEXT

pytestmark = pytest.mark.django_db

LINE = "- a fact the agent was told, number {:08d}, kept for later\n"  # 56 characters


def seen(response) -> str:
    """The page's text as a reader sees it (tags dropped)."""
    return html.unescape(re.sub(r"<[^>]+>", "", response.content.decode()))


def memory_md(characters: int) -> tuple[MemoryStore, str]:
    memory = MemoryStore.objects.get(kind="nanobot.memory")
    text = "".join(LINE.format(i) for i in range(characters // len(LINE) + 1))
    Path(memory.path).write_text(text)
    return memory, text


def test_a_file_past_the_edit_limit_shows_its_head_and_where_the_rest_is(
    operator_client, memory_sources
) -> None:
    memory, text = memory_md(MAX_TEXT + 100_000)
    last = text.splitlines()[-1]

    r = operator_client.get(f"/memory/{memory.key}/")

    page = seen(r)
    assert r.status_code == 200 and len(r.content) < 3 * SHOWN
    shown = len(text[:SHOWN].rpartition("\n")[0]) + 1
    assert f"Showing the first {shown:,} of {len(text):,} characters: download the whole file" in page
    assert "it is too long to edit here" in page
    assert LINE.format(0).strip() in page and last not in page
    assert ">Edit</a>" not in r.content.decode() and ">Blame</a>" not in r.content.decode()


def test_its_edit_page_is_refused_saying_why_and_nothing_is_written(operator_client, memory_sources) -> None:
    memory, text = memory_md(MAX_TEXT + 100_000)
    base = nanobot_memory.read(memory.ref()).version

    opened = operator_client.get(f"/memory/{memory.key}/edit")
    saved = operator_client.post(f"/memory/{memory.key}/edit", {"text": "short\n", "base_version": base})

    for r in (opened, saved):
        assert r.status_code == 400 and "<textarea" not in r.content.decode()
        why = f"MEMORY.md is {len(text):,} characters long, past the {MAX_TEXT:,} a memory store is edited up to"
        assert why in html.unescape(r.content.decode())
    assert Path(memory.path).read_text() == text


def test_blame_past_its_limit_is_refused_with_a_note_on_the_page_and_in_the_api(
    operator_client, memory_sources
) -> None:
    memory, text = memory_md(BLAMED + 1_000)

    page = operator_client.get(f"/memory/{memory.key}/blame")
    api = operator_client.get(f"/api/memory/{memory.key}/blame")

    why = (
        f"MEMORY.md is {len(text):,} characters long: who wrote each line is worked out for up to {BLAMED:,}"
    )
    assert page.status_code == 400 and why in html.unescape(page.content.decode())
    assert 'class="blame"' not in page.content.decode()
    assert api.status_code == 400 and why in api.json()["detail"]


def test_a_long_file_within_the_edit_limit_is_shown_cut_and_still_edited(
    operator_client, memory_sources
) -> None:
    memory, text = memory_md(SHOWN + 10_000)

    r = operator_client.get(f"/memory/{memory.key}/")

    assert f"of {len(text):,} characters: download the whole file" in seen(r)
    assert "too long to edit" not in seen(r) and ">Edit</a>" in r.content.decode()
    assert operator_client.get(f"/memory/{memory.key}/edit").status_code == 200


def test_the_export_and_the_api_give_the_whole_text(operator_client, memory_sources) -> None:
    memory, text = memory_md(MAX_TEXT + 100_000)

    export = operator_client.get(f"/memory/{memory.key}/export.md")
    got = operator_client.get(f"/api/memory/{memory.key}").json()

    assert export.status_code == 200 and text.splitlines()[-1] in export.content.decode()
    assert got["content"] == text  # whole: a cut content with the file's version could be PUT back
