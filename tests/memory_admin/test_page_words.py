"""The memory pages speak operator words, not the developers' notes, and one h1
on a page, whatever headings the memory's Markdown holds."""

from __future__ import annotations

import re

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db

NOTES = ("formats/", "§", "?tape=&lt;", "&amp;anchor=&lt;")


def test_no_memory_page_shows_the_developers_notes(operator_client, memory_sources) -> None:
    zone = MemoryStore.objects.get(kind="bub.zone")
    zone_page = operator_client.get(f"/memory/{zone.key}/").content.decode()
    assert "the agent's next context starts after it</strong>: the conversation before" in zone_page
    assert "an “as of” link in the store's Versions table" in zone_page
    for store in MemoryStore.objects.all():
        for path in ("/", "/edit", "?as_of=2030-01-01T00:00"):
            page = operator_client.get(f"/memory/{store.key}{path}").content.decode()
            assert not [note for note in NOTES if note in page], (store.title, path)


def h1s(page: str) -> list[str]:
    return re.findall(r"<h1[ >]", page)


def test_the_edit_page_and_its_preview_keep_one_h1(operator_client, memory_sources) -> None:
    memory = MemoryStore.objects.get(kind="nanobot.memory")
    text = "# Long-term Memory\n\n## Facts\n\n###### Six\n"
    key = memory.key

    edit = operator_client.post(f"/memory/{key}/edit", {"text": text, "base_version": "x", "preview": "1"})
    fragment = operator_client.post(f"/memory/{key}/preview", {"text": text}).content.decode()

    assert edit.status_code == 200 and len(h1s(edit.content.decode())) == 1
    assert "<h2>Long-term Memory</h2>" in edit.content.decode()
    assert fragment == "<h2>Long-term Memory</h2>\n<h3>Facts</h3>\n<h6>Six</h6>\n"


def test_the_store_page_keeps_one_h1_and_the_memory_s_headings_under_its_content(
    operator_client, memory_sources
) -> None:
    memory = MemoryStore.objects.get(kind="nanobot.memory")
    base = re.search(
        r'<code id="version">([^<]+)</code>', operator_client.get(f"/memory/{memory.key}/").content.decode()
    )
    operator_client.post(
        f"/memory/{memory.key}/edit", {"text": "# Title\n\ntext\n", "base_version": base.group(1)}
    )

    page = operator_client.get(f"/memory/{memory.key}/").content.decode()

    assert len(h1s(page)) == 1 and "<h3>Title</h3>" in page
