"""A memory file that is not UTF-8 text (bad bytes, a binary file): shown read only, never rewritten,
and what Tapeview keeps of it never passed off as its bytes."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from memory_admin.stores import nanobot_memory
from memory_admin.stores.model import StoreError
from tapeview.accounts.models import AuditEvent

pytestmark = pytest.mark.django_db

LATIN1 = b"# Facts 2\n- na\xefve r\xe9sum\xe9\n"  # Latin-1, not UTF-8: byte 14 is 0xEF
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x01\x02"


def memory_md(bad: bytes) -> MemoryStore:
    memory = MemoryStore.objects.get(kind="nanobot.memory")
    Path(memory.path).write_bytes(bad)
    return memory


def test_a_memory_file_that_is_not_utf8_is_shown_read_only_saying_where(
    operator_client, memory_sources
) -> None:
    memory = memory_md(LATIN1)

    r = operator_client.get(f"/memory/{memory.key}/")

    page = html.unescape(r.content.decode())
    assert r.status_code == 200
    assert "MEMORY.md is not UTF-8 text (byte 14 (0xEF) is not UTF-8)" in page
    assert "Tapeview will not rewrite it, so the file keeps its bytes as they are" in page
    assert "- na\ufffdve r\ufffdsum\ufffd" in page
    assert ">Edit</a>" not in page


def test_a_binary_memory_file_never_reaches_the_page_as_raw_control_bytes(
    operator_client, memory_sources
) -> None:
    memory = memory_md(BINARY)

    r = operator_client.get(f"/memory/{memory.key}/")

    page = r.content.decode()
    assert r.status_code == 200 and ">Edit</a>" not in page
    assert not any(chr(c) in page for c in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)))
    assert "PNG" in page and "\u2400\u2400\u2400" in page  # the NULs, as ␀


@pytest.mark.parametrize("bad", [LATIN1, BINARY], ids=["latin-1", "binary"])
def test_editing_a_file_that_is_not_text_is_refused_and_keeps_its_bytes(
    operator_client, memory_sources, bad: bytes
) -> None:
    memory = memory_md(bad)
    base = nanobot_memory.read(memory.ref()).version

    opened = operator_client.get(f"/memory/{memory.key}/edit")
    saved = operator_client.post(
        f"/memory/{memory.key}/edit", {"text": "# Facts 2\n- added\n", "base_version": base}
    )

    assert opened.status_code == saved.status_code == 400
    for r in (opened, saved):
        assert "is not UTF-8 text" in html.unescape(r.content.decode())
        assert "<textarea" not in r.content.decode()
    assert Path(memory.path).read_bytes() == bad
    assert not AuditEvent.objects.exists()


def test_the_api_refuses_to_replace_a_file_that_is_not_text(writer, memory_sources) -> None:
    memory = memory_md(LATIN1)
    got = writer.get(f"/api/memory/{memory.key}").json()

    r = writer.put(
        f"/api/memory/{memory.key}/long-term",
        {"content": got["content"] + "- added\n", "base_version": got["version"]},
    )

    assert got["long_term"] is False
    assert r.status_code == 400 and "is not UTF-8 text (byte 14 (0xEF) is not UTF-8)" in r.json()["detail"]
    assert Path(memory.path).read_bytes() == LATIN1


def test_the_version_kept_of_a_file_that_was_not_text_says_so_and_is_not_restored(
    operator_client, memory_sources
) -> None:
    memory = memory_md(LATIN1)
    seen = nanobot_memory.read(memory.ref()).version
    operator_client.get(f"/memory/{memory.key}/")  # Tapeview keeps this version
    path = Path(memory.path)
    path.write_text("# Facts 3\n- fixed by the agent\n")  # the agent rewrites it as text
    now = nanobot_memory.read(memory.ref()).version

    page = html.unescape(operator_client.get(f"/memory/{memory.key}/").content.decode())
    versions = operator_client.get(f"/api/memory/{memory.key}/versions").json()["items"]
    r = operator_client.post(
        f"/memory/{memory.key}/restore", {"version": seen, "base_version": now, "confirmed": "on"}
    )

    kept = next(v for v in versions if v["version"] == seen)
    assert "not UTF-8 text: kept as shown" in kept["summary"] and "cannot be restored" in kept["summary"]
    assert f'name="version" value="{seen}"' not in page  # no Restore button for it
    assert r.status_code == 400 and "was not UTF-8 text" in html.unescape(r.content.decode())
    assert path.read_bytes() == b"# Facts 3\n- fixed by the agent\n"


@pytest.mark.parametrize("bad", [LATIN1, BINARY], ids=["latin-1", "binary"])
def test_the_writer_itself_refuses_a_file_that_is_not_text(tmp_path: Path, bad: bytes) -> None:
    (tmp_path / "memory").mkdir()
    ref = next(r for r in nanobot_memory.discover(tmp_path) if r.kind == nanobot_memory.MEMORY_KIND)
    ref.path.write_bytes(bad)
    snap = nanobot_memory.read(ref)

    with pytest.raises(StoreError, match="is not UTF-8 text"):
        nanobot_memory.write(ref, snap.text + "- added\n", snap.version)

    assert ref.path.read_bytes() == bad and snap.not_text
