"""A git commit of a nanobot store, listed among Tapeview's revisions, is restorable as they are: the
question shows what its text changes, the answer is written on top of the version the question showed
(a conflict if the file changed since), and a commit that holds the file's text offers no restore."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from memory_admin.stores import nanobot_memory
from tests.memory_admin import test_version_order
from tests.memory_admin.test_version_order import versions_rows

pytestmark = pytest.mark.django_db
# MEMORY.md seen by Tapeview (R1), committed by nanobot (A), Dream's commit (B), edited by hand (R2).
timeline = test_version_order.timeline


def restore_form(page: str, version: str) -> str | None:
    """The restore button of the row of `version`, if it has one."""
    row = next(r for r in versions_rows(page) if f'<code title="{version}"' in r)
    found = re.search(
        r'<form method="post" action="[^"]+/restore".*?<button[^>]*>([^<]+)</button>', row, re.S
    )
    return found.group(1) if found else None


def test_a_commits_row_offers_to_restore_its_text(timeline, operator_client) -> None:
    page = operator_client.get(f"/memory/{timeline['key']}/").content.decode()

    assert restore_form(page, timeline["B"]) == "Restore this commit's text"
    assert restore_form(page, timeline["R1"]) == "Restore this version"


def test_the_question_before_restoring_a_commit_shows_what_its_text_changes(
    timeline, operator_client
) -> None:
    store = MemoryStore.objects.get(key=timeline["key"])
    before = Path(store.path).read_bytes()

    r = operator_client.post(
        f"/memory/{store.key}/restore", {"version": timeline["B"], "base_version": timeline["R2"]}
    )

    page = r.content.decode()
    commit = timeline["B"].removeprefix("git:")[:8]
    assert r.status_code == 200 and Path(store.path).read_bytes() == before
    assert f"Restore the text of commit {commit}? The file will hold that text again" in page
    changes = re.search(r'<section id="changes">(.*?)</section>', page, re.S).group(1)
    assert re.search(r'<tr class="del">(?:(?!</tr>).)*typed in by hand', changes, re.S)


def test_restoring_a_commit_writes_its_text_and_the_page_says_so(timeline, operator_client) -> None:
    store = MemoryStore.objects.get(key=timeline["key"])
    commit = timeline["B"].removeprefix("git:")
    sent = {"version": timeline["B"], "base_version": timeline["R2"], "confirmed": "on"}

    r = operator_client.post(f"/memory/{store.key}/restore", sent, follow=True)

    page = r.content.decode()
    assert Path(store.path).read_text() == nanobot_memory.text_at(store.ref(), commit)
    assert "typed in by hand" not in Path(store.path).read_text()
    now = re.search(r'<code id="version">(\w+)</code>', page).group(1)
    assert f"Restored the text of commit {commit[:8]}: saved as version {now}." in page
    # The commit holds the file's text now: restoring it again would change nothing, so it is not offered.
    assert restore_form(page, timeline["B"]) is None
    assert restore_form(page, timeline["R2"]) == "Restore this version"


def test_restoring_a_commit_after_the_agent_wrote_is_a_conflict_that_names_the_commit(
    timeline, operator_client
) -> None:
    store = MemoryStore.objects.get(key=timeline["key"])
    path = Path(store.path)
    path.write_text(path.read_text() + "- Dream again\n")
    before = path.read_bytes()
    sent = {"version": timeline["B"], "base_version": timeline["R2"], "confirmed": "on"}

    r = operator_client.post(f"/memory/{store.key}/restore", sent)

    page = r.content.decode()
    commit = timeline["B"].removeprefix("git:")[:8]
    assert r.status_code == 409 and path.read_bytes() == before
    assert f"Your change: restore the text of commit {commit}" in re.sub(r"<[^>]+>", "", page)
    changes = re.search(r'<section id="your-changes">(.*?)</section>', page, re.S).group(1)
    assert "Dream again" in changes
