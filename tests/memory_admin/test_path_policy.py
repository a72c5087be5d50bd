"""A memory file that is a link out of its source is never read, shown or searched."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from memory_admin import catalog
from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_a_user_md_linked_to_a_secret_outside_is_not_a_store(viewer_client, settings, tmp_path: Path) -> None:
    data = tmp_path / "nanobot"
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", data)
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$SECRETHASH:19000:0:99999:7:::\n")
    user_md = data / "workspace" / "USER.md"
    user_md.unlink()
    os.symlink(secret, user_md)
    settings.TAPEVIEW_SOURCES = f"nb=nanobot:{data}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    catalog.sync_stores()

    titles = set(MemoryStore.objects.values_list("title", flat=True))
    assert "USER.md" not in titles and "MEMORY.md" in titles
    assert "SECRETHASH" not in viewer_client.get("/memory/").content.decode()
    for store in MemoryStore.objects.all():
        assert "SECRETHASH" not in viewer_client.get(f"/memory/{store.key}/").content.decode()


@pytest.mark.parametrize("name", ["workspace/memory/MEMORY.md", "workspace/USER.md"])
def test_a_memory_file_swapped_for_a_link_out_after_it_was_found_is_not_read(
    operator_client, reader, settings, tmp_path: Path, name: str
) -> None:
    data = tmp_path / "nanobot"
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", data)
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$SECRETHASH:19000:0:99999:7:::\n")
    settings.TAPEVIEW_SOURCES = f"nb=nanobot:{data}"
    settings.TAPEVIEW_REFRESH_SECONDS = 3600  # no look at the files between the swap and the pages
    catalog.sync_stores()
    store = MemoryStore.objects.get(path=str(data / name))
    swapped = data / f"{name}.swap"
    os.symlink(secret, swapped)
    os.replace(swapped, data / name)

    for path in ("", "edit", "blame", "export.md"):
        page = operator_client.get(f"/memory/{store.key}/{path}")
        assert page.status_code == 404 and "SECRETHASH" not in page.content.decode()
    answer = reader.get(f"/api/memory/{store.key}")
    assert answer.status_code == 404 and "outside the source" in answer.json()["detail"]
    assert "SECRETHASH" not in answer.content.decode()
    assert secret.read_text().startswith("root:")


def test_memory_files_linked_out_of_their_source_are_named_on_the_sources_page(
    viewer_client, reader, settings, tmp_path: Path
) -> None:
    nanobot, yachiyo = tmp_path / "nanobot", tmp_path / "yachiyo" / "data"
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", nanobot)
    shutil.copytree(FIXTURES / "yachiyo_memory" / "data", yachiyo)
    secret = tmp_path / "shadow"
    secret.write_text("root:$6$SECRETHASH:19000:0:99999:7:::\n")
    for link in (
        nanobot / "workspace" / "memory" / "MEMORY.md",
        yachiyo / "long-term-memory" / "memory.json",
    ):
        link.unlink()
        os.symlink(secret, link)
    settings.TAPEVIEW_SOURCES = f"nb=nanobot:{nanobot},ya=yachiyo:{yachiyo}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    catalog.sync_stores()

    said = "a link to something outside the source: not read"
    sources = {s["label"]: s for s in reader.get("/api/sources").json()["items"]}
    assert f"MEMORY.md: {said}" in sources["nb"]["problems"] and not sources["nb"]["ok"]
    assert f"memory.json: {said}" in sources["ya"]["problems"] and not sources["ya"]["ok"]
    page = viewer_client.get("/sources/").content.decode()
    assert f"MEMORY.md: {said}" in page and f"memory.json: {said}" in page
    assert "SECRETHASH" not in page
