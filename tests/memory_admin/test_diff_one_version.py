"""The diff page of a store with one version says there is nothing to compare; its first version reads as one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db


def selected(page: str, name: str) -> list[str]:
    """The text of the options a picker has selected."""
    picker = re.search(rf'<select name="{name}">(.*?)</select>', page, re.S).group(1)
    return re.findall(r"<option [^>]*selected>([^<]*)</option>", picker)


def test_a_store_with_one_version_says_there_is_nothing_to_compare(viewer_client, memory_sources) -> None:
    memory = MemoryStore.objects.get(kind="nanobot.file", title="USER.md")
    page = viewer_client.get(f"/memory/{memory.key}/").content.decode()
    version = re.search(r'<code id="version">(\w+)</code>', page).group(1)

    for query in ("", f"?to={version}", f"?frm={version}&to={version}"):
        r = viewer_client.get(f"/memory/{memory.key}/diff{query}")
        page = r.content.decode()
        assert r.status_code == 200
        assert "only one version so far" in page and "nothing to compare" in page
        assert version[:8] in page
        assert "(empty)" not in page and "→" not in page
        assert "<select" not in page and 'class="diff"' not in page


def test_the_first_of_several_versions_is_compared_with_nothing_as_its_pickers_say(
    operator_client, memory_sources
) -> None:
    memory = MemoryStore.objects.get(kind="nanobot.file", title="USER.md")
    page = operator_client.get(f"/memory/{memory.key}/").content.decode()
    first = re.search(r'<code id="version">(\w+)</code>', page).group(1)
    text = Path(memory.path).read_text()
    operator_client.post(
        f"/memory/{memory.key}/edit", {"text": text + "Timezone: Europe/Berlin\n", "base_version": first}
    )

    page = operator_client.get(f"/memory/{memory.key}/diff?to={first}").content.decode()
    assert f"the first version, {first}" in page and "(empty)" not in page
    assert selected(page, "frm") == ["(nothing: before the first version)"]
    assert len(selected(page, "to")) == 1 and first[:8] in selected(page, "to")[0]
    assert '<tr class="add">' in page

    page = operator_client.get(f"/memory/{memory.key}/diff").content.decode()
    assert f"{first} →" in page and first[:8] in selected(page, "frm")[0]
    assert "Timezone: Europe/Berlin" in page
