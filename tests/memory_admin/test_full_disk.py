"""A write the disk refuses is 507 with what happened, on the page and in the API: never a 500."""

from __future__ import annotations

import errno
import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from memory_admin.stores import files

pytestmark = pytest.mark.django_db


@pytest.fixture
def full_disk(monkeypatch) -> None:
    def refuse(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "write", refuse)


def test_an_edit_on_a_full_disk_says_so_and_leaves_the_file(
    operator_client, memory_sources, full_disk
) -> None:
    memory = MemoryStore.objects.get(kind="nanobot.memory", title="MEMORY.md")
    path = Path(memory.path)
    before = path.read_bytes()
    page = operator_client.get(f"/memory/{memory.key}/edit").content.decode()
    base = re.search(r'name="base_version" value="(\w+)"', page).group(1)

    answer = operator_client.post(f"/memory/{memory.key}/edit", {"text": "new", "base_version": base})

    assert answer.status_code == 507 and "The disk refused the write" in answer.content.decode()
    assert path.read_bytes() == before


def test_the_api_answers_507_with_the_reason(writer, memory_sources, full_disk) -> None:
    memory = MemoryStore.objects.get(kind="nanobot.memory", title="MEMORY.md")
    version = writer.get(f"/api/memory/{memory.key}").json()["version"]

    answer = writer.put(f"/api/memory/{memory.key}/long-term", {"content": "new", "base_version": version})

    assert answer.status_code == 507 and answer.json()["detail"]
