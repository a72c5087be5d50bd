"""Files the server may not read (mode 000, and no root's overrides): `tapeview serve` without
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH answers every page and API route of such a tape or memory
store with what is wrong, never a 500; the Sources page names the file; the indexer goes on."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.servers import environment, own_database, sign_in_by_link, tapeview_serve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TAPE = "9d11f561157e98d3__0b871d5e50e7c192.jsonl"  # the real session of the sample
OTHER = "9d11f561157e98d3__bf2795869dc767e2.jsonl"
# Two tapes new since the last index: the server's indexer reads one and may not read the other.
NEW, NEW_UNREADABLE = "9d11f561157e98d3__0000000000000001.jsonl", "9d11f561157e98d3__0000000000000002.jsonl"
# The server keeps its own rights as the files' owner, not root's power to read any file.
WITHOUT_OVERRIDES = (
    "setpriv",
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
)
TIMEOUT = 30
DENIED = "cannot be read: permission denied"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv(1) to run the server without root's file overrides",
)


def tapeview(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "tapeview", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@contextmanager
def socket_reachable(env: dict[str, str]) -> Iterator[None]:
    """A PostgreSQL socket folder the server may reach without root's overrides: the throwaway
    server.s (`.ci/postgres_server.py`, in a folder of mode 700) gets g+x and o+x meanwhile."""
    host = parse_qs(urlsplit(env.get("TAPEVIEW_DATABASE_URL", "")).query).get("host", [""])[0]
    changed = []
    for folder in Path(host).parents if host.startswith("/") else ():
        mode = folder.stat().st_mode
        if mode & (stat.S_IXGRP | stat.S_IXOTH) != stat.S_IXGRP | stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXGRP | stat.S_IXOTH)
            changed.append((folder, mode))
    try:
        yield
    finally:
        for folder, mode in changed:
            folder.chmod(mode)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """The server over a Bub folder and a nanobot workspace, indexed while every file was readable;
    then one tape and MEMORY.md made mode 000, and two tapes added, one of them mode 000."""
    root = tmp_path_factory.mktemp("unreadable")
    bub, nanobot, home = root / "bub", root / "nanobot", root / "home"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", bub)
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", nanobot)
    home.mkdir()
    env = environment(
        home,
        f"bub=bub:{bub},nanobot=nanobot:{nanobot}",
        TAPEVIEW_QUIET_SECONDS="0",
        TAPEVIEW_REFRESH_SECONDS="0",
    )
    with own_database(env, "tapeview_unreadable") as env:
        tapeview(env, "index")
        token = tapeview(env, "token", "create", "t", "--scope", "write").strip().splitlines()[-1]
        memory_md = nanobot / "workspace" / "memory" / "MEMORY.md"
        for name in (NEW, NEW_UNREADABLE):
            shutil.copy(bub / OTHER, bub / name)
        for path in (bub / TAPE, bub / NEW_UNREADABLE, memory_md):
            path.chmod(0)
        with socket_reachable(env), tapeview_serve(env, home, inside=WITHOUT_OVERRIDES) as (base, link, _):
            pages = requests.Session()
            assert sign_in_by_link(pages, link, TIMEOUT).status_code == 200  # the first admin
            api = requests.Session()
            api.headers["Authorization"] = f"Bearer {token}"
            tapes = indexed(api, base, NEW)
            stores = api.get(f"{base}/api/memory?limit=100", timeout=TIMEOUT).json()["items"]
            yield {
                "base": base,
                "pages": pages,
                "api": api,
                "tape": next(t["id"] for t in tapes if t["name"] + ".jsonl" == TAPE),
                "other": next(t["id"] for t in tapes if t["name"] + ".jsonl" == OTHER),
                "tapes": tapes,
                "store": next(s["id"] for s in stores if s["kind"] == "nanobot.memory"),
                "log": home / "serve.log",
            }


def indexed(api: requests.Session, base: str, name: str) -> list[dict]:
    """The tapes of the Bub source, once the server's indexer has read the tape `name`."""
    deadline = time.monotonic() + 60
    while True:
        tapes = api.get(f"{base}/api/tapes?source=bub&limit=100", timeout=TIMEOUT).json()["items"]
        if any(t["name"] + ".jsonl" == name and t["entries"] for t in tapes):
            return tapes
        assert time.monotonic() < deadline, tapes
        time.sleep(0.1)


TAPE_PAGES = (
    "/tapes/{k}/",
    "/tapes/{k}/?end=1",
    "/tapes/{k}/tail?after=1",
    "/tapes/{k}/context",
    "/tapes/{k}/handoff",
    "/tapes/{k}/lineage",
    "/tapes/{k}/export.jsonl",
    "/tapes/{k}/export.md",
    "/tapes/{k}/entries/3/",
    "/tapes/{k}/entries/3/raw",
    "/tapes/{k}/entries/3/reviews",
)
TAPE_API = (
    "/api/tapes/{k}",
    "/api/tapes/{k}/entries",
    "/api/tapes/{k}/entries?around=3",
    "/api/tapes/{k}/entries/3",
    "/api/tapes/{k}/entries/3/raw",
    "/api/tapes/{k}/anchors",
    "/api/tapes/{k}/context",
    "/api/tapes/{k}/phases",
    "/api/tapes/{k}/lineage",
    "/api/tapes/{k}/budget",
    "/api/tapes/{k}/export",
    "/api/tapes/{k}/export?format=md",
    "/api/tapes/{k}/reviews/export",
)
STORE_PAGES = (
    "/memory/{k}/",
    "/memory/{k}/edit",
    "/memory/{k}/diff",
    "/memory/{k}/blame",
    "/memory/{k}/export.md",
    "/memory/{k}/export.json",
)
STORE_API = (
    "/api/memory/{k}",
    "/api/memory/{k}/versions",
    "/api/memory/{k}/diff",
    "/api/memory/{k}/blame",
    "/api/memory/{k}/export",
)


def answered(r: requests.Response) -> None:
    """No crash: every route answers what it is or what is wrong; one that reads the file says so."""
    assert r.status_code in (200, 409, 503), (r.url, r.status_code, r.text[:500])  # (not sent to sign in)
    if r.status_code == 503:
        said = r.json()["detail"] if "json" in r.headers["Content-Type"] else r.text
        assert DENIED in said, (r.url, said[:500])


@pytest.mark.parametrize("route", TAPE_PAGES + STORE_PAGES)
def test_every_page_of_an_unreadable_file_says_it_cannot_be_read(server: dict, route: str) -> None:
    key = server["store"] if route.startswith("/memory/{k}") else server["tape"]
    r = server["pages"].get(server["base"] + route.format(k=key), timeout=TIMEOUT, allow_redirects=False)
    answered(r)


@pytest.mark.parametrize("route", TAPE_API + STORE_API)
def test_every_api_route_of_an_unreadable_file_says_it_cannot_be_read(server: dict, route: str) -> None:
    key = server["store"] if route.startswith("/api/memory") else server["tape"]
    r = server["api"].get(server["base"] + route.format(k=key), timeout=TIMEOUT)
    answered(r)
    assert "json" in r.headers["Content-Type"], route


def test_the_timeline_and_the_entry_api_say_why(server: dict) -> None:
    base, tape = server["base"], server["tape"]
    page = server["pages"].get(f"{base}/tapes/{tape}/", timeout=TIMEOUT)
    assert page.status_code == 503 and DENIED in page.text and TAPE in page.text
    r = server["api"].get(f"{base}/api/tapes/{tape}/entries/3", timeout=TIMEOUT)
    assert r.status_code == 503 and r.json()["detail"] == f"{TAPE} {DENIED}"
    r = server["api"].get(f"{base}/api/memory/{server['store']}", timeout=TIMEOUT)
    assert r.status_code == 503 and r.json()["detail"] == f"MEMORY.md {DENIED}"


def test_writes_to_an_unreadable_file_are_refused_with_why(server: dict) -> None:
    base = server["base"]
    r = server["api"].post(
        f"{base}/api/tapes/{server['tape']}/handoff", json={"name": "phase/x"}, timeout=TIMEOUT
    )
    answered(r)
    assert r.status_code == 503
    r = server["api"].put(
        f"{base}/api/memory/{server['store']}/long-term",
        json={"content": "x", "base_version": "0" * 64},
        timeout=TIMEOUT,
    )
    answered(r)
    assert r.status_code == 503


def test_the_other_tapes_read_as_before(server: dict) -> None:
    r = server["api"].get(f"{server['base']}/api/tapes/{server['other']}/entries", timeout=TIMEOUT)
    assert r.status_code == 200 and r.json()["items"]


def test_the_sources_page_and_api_name_the_unreadable_files(server: dict) -> None:
    base = server["base"]
    sources = {
        s["label"]: s for s in server["api"].get(f"{base}/api/sources", timeout=TIMEOUT).json()["items"]
    }
    assert not sources["bub"]["ok"] and not sources["nanobot"]["ok"]
    assert any(TAPE in p and DENIED in p for p in sources["bub"]["problems"]), sources["bub"]
    assert any("MEMORY.md" in p and DENIED in p for p in sources["nanobot"]["problems"]), sources["nanobot"]
    page = server["pages"].get(f"{base}/sources/", timeout=TIMEOUT).text
    assert re.search(re.escape(TAPE) + r"[^<]*" + re.escape(DENIED), page)
    assert re.search(r"MEMORY\.md[^<]*" + re.escape(DENIED), page)


def test_the_indexer_says_which_file_it_may_not_read_and_reads_the_others(server: dict) -> None:
    new = {t["name"] + ".jsonl": t for t in server["tapes"]}
    assert new[NEW]["entries"] == new[OTHER]["entries"] > 0
    assert new[NEW_UNREADABLE]["entries"] == 0
    r = server["api"].get(f"{server['base']}/api/tapes/{new[NEW_UNREADABLE]['id']}", timeout=TIMEOUT)
    assert r.status_code == 200 and r.json()["problem"] == DENIED
    page = server["pages"].get(f"{server['base']}/tapes/{new[NEW_UNREADABLE]['id']}/", timeout=TIMEOUT)
    assert page.status_code == 200 and DENIED in page.text
    log = server["log"].read_text()
    assert f"{NEW_UNREADABLE}: {NEW_UNREADABLE} {DENIED}" in log and "Traceback" not in log
