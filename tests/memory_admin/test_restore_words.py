"""Restoring an earlier version of a file: versions are content hashes, so the file holds that version
again; the pages say so, and the question before it shows what will change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db


def version_on(page: str) -> str:
    return re.search(r'<code id="version">(\w+)</code>', page).group(1)


@pytest.fixture
def replaced(operator_client, memory_sources) -> tuple[MemoryStore, str, str]:
    """USER.md seen at its first version, then replaced through Tapeview: (store, first, current)."""
    memory = MemoryStore.objects.get(kind="nanobot.file", title="USER.md")
    first = version_on(operator_client.get(f"/memory/{memory.key}/").content.decode())
    operator_client.post(f"/memory/{memory.key}/edit", {"text": "replaced\n", "base_version": first})
    current = version_on(operator_client.get(f"/memory/{memory.key}/").content.decode())
    return memory, first, current


def test_the_question_before_a_restore_shows_what_will_change(operator_client, replaced) -> None:
    memory, first, current = replaced
    page = operator_client.post(
        f"/memory/{memory.key}/restore", {"version": first, "base_version": current}
    ).content.decode()

    assert f"The file will hold version {first} again" in page
    assert "written as a new version" not in page
    changes = re.search(r'<section id="changes">(.*?)</section>', page, re.S)
    assert changes and '<tr class="del">' in changes.group(1) and "replaced" in changes.group(1)


def test_after_a_restore_the_page_says_the_file_holds_that_version_again(operator_client, replaced) -> None:
    memory, first, current = replaced
    done = operator_client.post(
        f"/memory/{memory.key}/restore",
        {"version": first, "base_version": current, "confirmed": "on"},
        follow=True,
    )
    page = done.content.decode()

    assert f"Restored version {first}: the file holds version {first} again." in page
    assert f"saved as version {first}" not in page
    row = re.search(rf'<tr class="current">(?:(?!</tr>).)*{first}(?:(?!</tr>).)*</tr>', page, re.S)
    assert row and "current" in row.group(0) and "restored" in row.group(0) and "by olga" in row.group(0)
    assert Path(memory.path).read_text() != "replaced\n"


@pytest.mark.parametrize("how", ["gone", "unreadable"])
def test_the_question_is_asked_where_the_file_cannot_be_read_now(operator_client, replaced, how) -> None:
    """A file gone or unreadable since: the question is still asked (a 200, not an error page), and
    nothing is written until it is answered."""
    memory, first, current = replaced
    path = Path(memory.path)
    if how == "gone":
        path.unlink()
    else:
        path.write_bytes(b"\xff\xfe not UTF-8 \xff\n")
    before = path.read_bytes() if path.exists() else None
    r = operator_client.post(f"/memory/{memory.key}/restore", {"version": first, "base_version": current})

    assert r.status_code == 200
    page = r.content.decode()
    assert f"The file will hold version {first} again" in page
    assert (path.read_bytes() if path.exists() else None) == before


def test_a_restore_asked_after_the_agent_wrote_is_answered_on_top_of_what_it_showed(
    operator_client, replaced
) -> None:
    """The question shows the file as it is now, the agent's new line going; answering it restores at
    once, without a conflict about the version the store page was opened at."""
    memory, first, current = replaced
    path = Path(memory.path)
    path.write_text(path.read_text() + "- the agent wrote this meanwhile\n")
    page = operator_client.post(
        f"/memory/{memory.key}/restore", {"version": first, "base_version": current}
    ).content.decode()

    assert 'id="changed-since"' in page
    changes = re.search(r'<section id="changes">(.*?)</section>', page, re.S).group(1)
    assert '<tr class="del">' in changes and "the agent wrote this meanwhile" in changes
    base = re.search(r'name="base_version" value="(\w+)"', page).group(1)
    assert base != current
    done = operator_client.post(
        f"/memory/{memory.key}/restore", {"version": first, "base_version": base, "confirmed": "on"}
    )
    assert done.status_code == 302
    assert "meanwhile" not in path.read_text()
    # The file changed again after the question: the answer is a conflict, nothing written over it.
    path.write_text(path.read_text() + "- and again\n")
    again = operator_client.post(
        f"/memory/{memory.key}/restore", {"version": current, "base_version": first, "confirmed": "on"}
    )
    assert again.status_code == 409 and path.read_text().endswith("- and again\n")
