"""Tapes know their host: hosts of a fleet index sources of the same name into one database, each
keeps and removes only its own rows, and the session index, its API and the Sources page say
which host a tape is on once there is more than one."""

from __future__ import annotations

import html
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings

from tapeview.sources import SourceSpec
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape
from tests.conftest import Api
from tests.tapes.test_watcher import bub_line

ROW = re.compile(
    r'<td class="label"><a href="/tapes/(\w+)/"[^>]*>([^<]+)</a>.*?<td class="host" title="[^"]*">([^<]*)</td>',
    re.S,
)


def bub_tapes(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True)
    for name in names:
        (folder / f"{name}.jsonl").write_bytes(b"".join(bub_line(n, f"{folder.name} {name}") for n in (1, 2)))
    return folder


def index_as(host: str, label: str, folder: Path) -> discovery.SyncReport:
    """`tapeview index` run on another host of the fleet, into this test's database."""
    with override_settings(TAPEVIEW_HOST=host):
        return discovery.sync([SourceSpec(label, "bub", folder)])


@pytest.fixture
def fleet(db, settings, tmp_path: Path) -> dict[str, Path]:
    """Host alpha serves pages over its source `work`; host beta indexes its own `work` beside it.
    Both hold a tape named `shared`."""
    alpha = bub_tapes(tmp_path / "alpha", "shared", "only_alpha")
    beta = bub_tapes(tmp_path / "beta", "shared", "only_beta")
    settings.TAPEVIEW_HOST = "alpha"
    settings.TAPEVIEW_SOURCES = f"work=bub:{alpha}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    index_as("beta", "work", beta)
    return {"alpha": alpha, "beta": beta}


def rows(client, **params: str) -> set[tuple[str, str]]:
    """(label, host) of every row of the session index."""
    page = client.get("/", params).content.decode()
    return {(html.unescape(label), host) for _, label, host in ROW.findall(page)}


def test_both_hosts_tapes_are_listed_with_their_host(viewer_client, fleet) -> None:
    assert rows(viewer_client) == {
        ("shared", "alpha"),
        ("only_alpha", "alpha"),
        ("shared", "beta"),
        ("only_beta", "beta"),
    }
    page = viewer_client.get("/").content.decode()
    assert ">Host" in page and '<option value="beta"' in page


def test_the_api_lists_each_tape_with_its_host(client, read_token, fleet) -> None:
    r = Api(client, read_token).get("/api/tapes", source="work")
    assert r.status_code == 200
    found = {(t["label"], t["host"]) for t in r.json()["items"]}
    assert found == {("shared", "alpha"), ("only_alpha", "alpha"), ("shared", "beta"), ("only_beta", "beta")}
    shared = [t for t in r.json()["items"] if t["label"] == "shared"]
    assert len({t["id"] for t in shared}) == 2  # the same file name on two hosts: two tapes


def test_each_hosts_tape_page_reads_its_own_file(viewer_client, fleet) -> None:
    keys = {
        host: key
        for key, label, host in ROW.findall(viewer_client.get("/").content.decode())
        if label == "shared"
    }
    assert "alpha shared 1" in viewer_client.get(f"/tapes/{keys['alpha']}/").content.decode()
    # The page on alpha never opens beta's file: beta's tape shows what beta indexed, read from its path.
    assert Tape.objects.get(key=keys["beta"]).path == str(fleet["beta"] / "shared.jsonl")


def test_the_host_filter_narrows_the_page_and_the_api(viewer_client, client, read_token, fleet) -> None:
    assert rows(viewer_client, host="beta") == {("shared", "beta"), ("only_beta", "beta")}
    assert rows(viewer_client, host="nowhere") == set()
    r = Api(client, read_token).get("/api/tapes", host="alpha")
    assert {(t["label"], t["host"]) for t in r.json()["items"]} == {
        ("shared", "alpha"),
        ("only_alpha", "alpha"),
    }
    assert Api(client, read_token).get("/api/tapes", host="x" * 300).status_code == 422


def test_a_sync_on_one_host_never_removes_another_hosts_tapes(viewer_client, fleet) -> None:
    (fleet["alpha"] / "shared.jsonl").unlink()
    assert discovery.sync().removed == 1  # alpha's own gone file
    index_as("alpha", "elsewhere", fleet["alpha"])  # alpha's `work` is not in this run: alpha drops it
    assert not Tape.objects.filter(host="alpha", source="work").exists()
    assert rows(viewer_client, host="beta") == {("shared", "beta"), ("only_beta", "beta")}


def test_a_host_that_indexes_again_keeps_its_tapes(fleet) -> None:
    before = dict(Tape.objects.values_list("key", "host"))
    index_as("beta", "work", fleet["beta"])
    discovery.sync()
    assert dict(Tape.objects.values_list("key", "host")) == before


def test_the_sources_page_names_the_host_of_every_source(viewer_client, fleet) -> None:
    page = viewer_client.get("/sources/").content.decode()
    assert "<th>Host</th>" in page and '<td class="host">alpha</td>' in page
    elsewhere = page.split("Sources of other hosts")[1]
    assert '<td class="host">beta</td>' in elsewhere and "?source=work&amp;host=beta" in elsewhere


def test_an_index_of_one_host_shows_no_host(viewer_client, served) -> None:
    page = viewer_client.get("/").content.decode()
    assert 'class="host"' not in page and 'name="host"' not in page and ">Host" not in page
    assert "<th>Host</th>" not in viewer_client.get("/sources/").content.decode()
    assert {t.host for t in Tape.objects.all()} == {discovery.this_host()}


def test_another_hosts_watcher_does_not_stop_this_hosts_pages_from_scanning(viewer_client, fleet) -> None:
    with override_settings(TAPEVIEW_HOST="beta"):
        discovery.beat(started=True)  # beta's watcher indexes beta's files, not alpha's
    (fleet["alpha"] / "new_alpha.jsonl").write_bytes(bub_line(1))
    assert ("new_alpha", "alpha") in rows(viewer_client)
    assert "No indexer is running" in viewer_client.get("/sources/").content.decode()

    discovery.beat(started=True)  # alpha's own watcher: its pages leave the scan to it
    (fleet["alpha"] / "newer_alpha.jsonl").write_bytes(bub_line(1))
    assert ("newer_alpha", "alpha") not in rows(viewer_client)


def test_pages_only_read_the_index_when_the_web_tier_does_not_index(viewer_client, settings, fleet) -> None:
    settings.TAPEVIEW_WEB_INDEXES = False
    (fleet["alpha"] / "new_alpha.jsonl").write_bytes(bub_line(1))
    with (fleet["alpha"] / "shared.jsonl").open("ab") as f:
        f.write(bub_line(3, "alpha shared"))
    assert ("new_alpha", "alpha") not in rows(viewer_client)
    key = Tape.objects.get(host="alpha", name="shared").key
    assert "alpha shared 3" not in viewer_client.get(f"/tapes/{key}/").content.decode()

    settings.TAPEVIEW_WEB_INDEXES = True  # the default: pages look at the files themselves
    assert ("new_alpha", "alpha") in rows(viewer_client)
    assert "alpha shared 3" in viewer_client.get(f"/tapes/{key}/").content.decode()


# The version before hosts: the rows it indexed belong to the host that migrates, and keep their keys.
BEFORE = [("tapeview", "0008_indexer_heartbeat"), ("memory_admin", "0002_auditevent_to_accounts")]


def _migrate(targets: list[tuple[str, str | None]]):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    return executor.migrate(targets).apps


@pytest.mark.django_db(transaction=True)
def test_rows_indexed_before_hosts_belong_to_the_host_that_migrates(settings, tmp_path: Path) -> None:
    folder = bub_tapes(tmp_path / "bub", "old")
    old = _migrate(BEFORE)
    tape = old.get_model("tapeview", "Tape").objects.create(
        key="0ld",
        source="work",
        kind="bub",
        rel="old.jsonl",
        path=str(folder / "old.jsonl"),
        name="old",
        label="old",
    )
    old.get_model("memory_admin", "MemoryStore").objects.create(
        key="st0re",
        source="work",
        kind="bub.zone",
        rel="old.jsonl",
        path="/x",
        title="t",
        owner="o",
        tape_id=tape.pk,
    )
    settings.TAPEVIEW_HOST = "upgraded"
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from memory_admin.models import MemoryStore

    assert list(Tape.objects.values_list("key", "host")) == [("0ld", "upgraded")]
    assert list(MemoryStore.objects.values_list("key", "host")) == [("st0re", "upgraded")]
    index_as("upgraded", "work", folder)
    assert list(Tape.objects.values_list("key", "entries")) == [("0ld", 2)]  # the same tape, its URL kept


def test_a_tape_reset_on_its_host_keeps_its_host_and_key(fleet) -> None:
    shared = Tape.objects.get(host="alpha", name="shared")
    (fleet["alpha"] / "shared.jsonl").unlink()  # the agent starts the tape again: a new inode
    (fleet["alpha"] / "shared.jsonl").write_bytes(bub_line(1, "again"))
    discovery.sync()
    assert Tape.objects.get(key=shared.key).host == "alpha"
    assert discovery.sync().removed == 0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (None, socket.gethostname()),
        ("", socket.gethostname()),
        (" web-1 ", "web-1"),
        ("h" * 256, "at most 255"),
    ],
)
def test_the_host_is_the_machines_name_unless_told(tmp_path: Path, value: str | None, says: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAPEVIEW_")}
    env["TAPEVIEW_HOME"] = str(tmp_path)
    if value is not None:
        env["TAPEVIEW_HOST"] = value
    code = "from tapeview import settings; print(settings.TAPEVIEW_HOST)"
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert says in (run.stdout if run.returncode == 0 else run.stderr)
    assert (run.returncode == 0) == (value is None or len(value) <= 255)
