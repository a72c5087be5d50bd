"""A fleet's web tier reads another host's files from their copies in the database (tapes.filecopy):
the copy follows the file as the agent appends, resets and rewrites it, and pages and the API show
the same entries, raw lines and exports as from the file itself."""

from __future__ import annotations

import html
import os
import shutil
from pathlib import Path

import pytest
from django.test import Client, override_settings

from tapeview.sources import SourceSpec
from tapeview.tapes import discovery, filecopy
from tapeview.tapes.models import FileBlock, FileCopy, Tape
from tests.conftest import FIXTURES, Api
from tests.tapes.test_watcher import bub_line

pytestmark = pytest.mark.django_db


def copied_bytes(path: Path, host: str = "agent") -> bytes:
    copy = FileCopy.objects.get(digest=filecopy.digest(host, str(path)))
    blocks = FileBlock.objects.filter(copy=copy).order_by("start").values_list("start", "end", "data")
    out = b""
    for start, end, data in blocks:
        assert (start, end) == (len(out), len(out) + len(bytes(data)))  # no gap, no overlap
        out += bytes(data)
    assert copy.size == len(out)
    return out


def index_on(host: str, *specs: SourceSpec) -> None:
    """`tapeview index` on an agent host that copies its files (TAPEVIEW_COPY_FILES): the index,
    then the copy pass behind it."""
    with override_settings(TAPEVIEW_HOST=host, TAPEVIEW_COPY_FILES=True):
        discovery.sync(list(specs))
        filecopy.keep_tapes(Tape.objects.filter(host=host))


@pytest.fixture
def small_blocks(monkeypatch) -> None:
    monkeypatch.setattr(filecopy, "BLOCK", 700)  # a few lines a block: every path through the blocks


def test_a_tape_copy_follows_appends_and_a_reset_on_the_same_inode(tmp_path: Path, small_blocks) -> None:
    folder = tmp_path / "tapes"
    folder.mkdir()
    path = folder / "a__b.jsonl"
    path.write_bytes(b"".join(bub_line(n, f"first {n}") for n in range(1, 6)))
    spec = SourceSpec("work", "bub", folder)
    index_on("agent", spec)
    assert copied_bytes(path) == path.read_bytes()
    blocks = FileBlock.objects.count()
    with path.open("ab") as f:  # the agent appends: the last block grows, then new ones follow
        f.write(b"".join(bub_line(n, f"more {n}") for n in range(6, 12)))
    index_on("agent", spec)
    assert copied_bytes(path) == path.read_bytes() and FileBlock.objects.count() > blocks
    inode = os.stat(path).st_ino
    with path.open("wb") as f:  # made again on the same inode, bigger than before: a new generation
        f.write(b"".join(bub_line(n, f"again {n}") for n in range(1, 16)))
    assert os.stat(path).st_ino == inode
    index_on("agent", spec)
    assert copied_bytes(path) == path.read_bytes()
    path.unlink()  # gone from its host: the tape and its copy go
    index_on("agent", spec)
    assert not FileCopy.objects.exists() and not FileBlock.objects.exists()


def test_a_file_the_agent_rewrites_is_copied_whole_again(tmp_path: Path) -> None:
    root = tmp_path / "nanobot"
    shutil.copytree(FIXTURES / "nanobot" / "current", root)
    spec = SourceSpec("bot", "nanobot", root)
    index_on("agent", spec)
    tape = Tape.objects.filter(host="agent").exclude(entries=0).first()
    path = Path(tape.path)
    assert copied_bytes(path) == path.read_bytes()
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:-1]))  # nanobot saves the session again, shorter
    index_on("agent", spec)
    assert copied_bytes(path) == path.read_bytes()


@pytest.fixture
def web_tier(db, settings, tmp_path: Path) -> dict[str, object]:
    """Host `agent` indexed the real Bub tapes (copying them); this process is host `web`, whose
    disk does not have them: the folder is gone from here."""
    folder = tmp_path / "tapes"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", folder)
    index_on("agent", SourceSpec("work", "bub", folder))
    originals = {t.key: Path(t.path).read_bytes() for t in Tape.objects.filter(host="agent")}
    shutil.rmtree(folder)
    settings.TAPEVIEW_HOST = "web"
    settings.TAPEVIEW_WEB_INDEXES = False
    settings.TAPEVIEW_SOURCES = ""
    return {"originals": originals}


def busiest() -> Tape:
    return Tape.objects.filter(host="agent", role="tape").order_by("-entries").first()


def test_the_api_reads_another_hosts_entries_raw_lines_and_export_from_the_copy(
    client, read_token, web_tier
) -> None:
    api = Api(client, read_token)
    tape = busiest()
    original = web_tier["originals"][tape.key]
    lines = [line for line in original.split(b"\n") if line.strip()]
    r = api.get(f"/api/tapes/{tape.key}/entries", limit=500)
    assert r.status_code == 200
    items = r.json()["items"]
    assert len(items) == tape.entries == len(lines)
    assert all(item["readable"] for item in items)
    raw = client.get(f"/api/tapes/{tape.key}/entries/{items[-1]['pos']}/raw", headers=api.headers)
    assert raw.status_code == 200 and b"".join(raw.streaming_content).rstrip(b"\n") == lines[-1]
    export = client.get(f"/api/tapes/{tape.key}/export", {"format": "jsonl"}, headers=api.headers)
    assert export.status_code == 200 and b"".join(export.streaming_content) == original


def test_pages_show_another_hosts_tape_from_the_copy(viewer_client, web_tier) -> None:
    tape = busiest()
    page = viewer_client.get(f"/tapes/{tape.key}/", {"end": 1})
    assert page.status_code == 200
    text = page.content.decode()
    assert "file missing" not in text and "unreadable" not in text.lower()
    anchor = tape.last_anchor_pos
    context = viewer_client.get(f"/tapes/{tape.key}/context", {"anchor": anchor})
    assert context.status_code == 200


def test_a_tape_never_copied_is_a_clear_404_not_an_error(client, read_token, web_tier) -> None:
    FileCopy.objects.all().delete()
    tape = busiest()
    r = Api(client, read_token).get(f"/api/tapes/{tape.key}/entries/1/raw")
    assert r.status_code == 404
    assert "not copied" in r.json()["detail"]


@pytest.fixture
def memory_web_tier(db, settings, tmp_path: Path) -> dict[str, dict]:
    """Host `agent` indexed real memory files of every family (copying them); this process is host
    `web`, without them. Returns what the API said of each store on the agent's host."""
    from memory_admin import catalog

    (tmp_path / "bub").mkdir()
    shutil.copy(FIXTURES / "bub" / "hand_memory_zone.jsonl", tmp_path / "bub")
    for fixture in ("nanobot_memory", "yachiyo_memory", "araliya"):
        shutil.copytree(FIXTURES / fixture, tmp_path / fixture)
    specs = [
        SourceSpec("bub", "bub", tmp_path / "bub"),
        SourceSpec("nanobot", "nanobot", tmp_path / "nanobot_memory" / "current"),
        SourceSpec("yachiyo", "yachiyo", tmp_path / "yachiyo_memory" / "data"),
        SourceSpec("araliya", "araliya", tmp_path / "araliya"),
    ]
    with override_settings(TAPEVIEW_HOST="agent", TAPEVIEW_COPY_FILES=True):
        discovery.sync(specs)
        filecopy.keep_tapes(Tape.objects.filter(host="agent"))  # the copy pass: the zones' tapes
        catalog.sync_stores(specs)
    from memory_admin.models import MemoryStore
    from tapeview.accounts import tokens

    api = Api(Client(), tokens.create("r", "read")[1])
    settings.TAPEVIEW_HOST = "agent"  # what the agent's own host shows, read from the files
    seen = {s.key: api.get(f"/api/memory/{s.key}").json() for s in MemoryStore.objects.all()}
    for spec in specs:
        shutil.rmtree(spec.path)
    settings.TAPEVIEW_HOST = "web"
    settings.TAPEVIEW_WEB_INDEXES = False
    settings.TAPEVIEW_SOURCES = ""
    return seen


def test_another_hosts_memory_reads_the_same_from_the_copies(client, read_token, memory_web_tier) -> None:
    api = Api(client, read_token)
    kinds = set()
    for key, there in memory_web_tier.items():
        here = api.get(f"/api/memory/{key}")
        assert here.status_code == 200, (key, here.content[:300])
        assert here.json() == there
        kinds.add(there["kind"])
    assert {"bub.zone", "nanobot.memory", "nanobot.history", "yachiyo.memory", "araliya.kv"} <= kinds


def test_another_hosts_memory_pages_show_their_content(viewer_client, memory_web_tier) -> None:
    for key, there in memory_web_tier.items():
        page = viewer_client.get(f"/memory/{key}/")
        assert page.status_code == 200, key
        text = page.content.decode()
        assert "not copied" not in text and "file is gone" not in text, (there["kind"], key)
        if there.get("long_term_text"):
            first = there["long_term_text"].strip().splitlines()[0].lstrip("#- ").strip()
            assert first[:20] in html.unescape(text), (there["kind"], first)


def test_another_hosts_store_never_copied_says_so(viewer_client, client, read_token, memory_web_tier) -> None:
    FileCopy.objects.all().delete()
    for key, there in memory_web_tier.items():
        page = viewer_client.get(f"/memory/{key}/")
        assert page.status_code == 200, (there["kind"], key)
        assert "not copied to the database" in html.unescape(page.content.decode()), there["kind"]
        r = Api(client, read_token).get(f"/api/memory/{key}")
        assert r.status_code == 404 and "not copied to the database" in r.json()["detail"], there["kind"]


def test_the_handoff_page_of_another_hosts_tape_reads_its_end_from_the_copy(
    operator_client, web_tier
) -> None:
    tape = busiest()
    page = operator_client.get(f"/tapes/{tape.key}/handoff")
    assert page.status_code == 200
    text = html.unescape(page.content.decode())
    # The real tape ends a turn and has been still for long: idle, as its host would find it.
    assert "idle" in text and "file is gone" not in text and "not copied" not in text


def test_pages_of_another_hosts_tape_never_copied_are_a_404_that_says_why(operator_client, web_tier) -> None:
    FileCopy.objects.all().delete()
    tape = busiest()
    for url in (f"/tapes/{tape.key}/handoff", f"/tapes/{tape.key}/", f"/tapes/{tape.key}/context"):
        page = operator_client.get(url)
        assert page.status_code == 404, url
        assert "not copied to the database" in html.unescape(page.content.decode()), url
