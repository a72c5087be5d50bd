"""One background indexer: `tapeview serve` serves at once and keeps every source indexed as agents
write, without any page scanning the sources; `tapeview index --watch` stops cleanly.

The real server runs over its own SQLite file, or, when TAPEVIEW_DATABASE_URL names a PostgreSQL
server (`.ci/postgres_server.py`), a database of this test's own on it, dropped after.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
import requests
from django.utils import timezone

from tapeview.tapes import discovery
from tapeview.tapes.models import Indexer
from tests.servers import environment, own_database, sign_in_by_link, tapeview_serve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TIMEOUT = 30


def bub_folder(root: Path) -> Path:
    """A copy of the Bub sample tapes (the top-level files only)."""
    root.mkdir()
    for f in (FIXTURES / "bub").iterdir():
        if f.is_file():
            shutil.copy2(f, root / f.name)
    return root


def bub_line(n: int, text: str = "hello") -> bytes:
    entry = {"id": n, "kind": "message", "payload": {"role": "user", "content": f"{text} {n}"}, "meta": {}}
    entry["date"] = "2026-01-01T00:00:00+00:00"
    return orjson.dumps(entry) + b"\n"


@contextmanager
def database(home: Path, sources: dict[str, Path]) -> Iterator[dict[str, str]]:
    """The environment of the real commands: the sources, and their own SQLite file or PostgreSQL database."""
    env = environment(
        home,
        ",".join(f"{label}=bub:{path}" for label, path in sources.items()),
        TAPEVIEW_REFRESH_SECONDS="0",  # without the watcher, every page would scan every source
    )
    with own_database(env, "tapeview_watch") as env:
        yield env


@contextmanager
def serve(env: dict[str, str], home: Path, *args: str) -> Iterator[tuple[str, str, float]]:
    """The real `tapeview serve`; nothing it logged may be a traceback."""
    with tapeview_serve(env, home, *args) as served:
        yield served
        log = (home / "serve.log").read_text()
        assert "Traceback" not in log, log[-3000:]


def api_client(env: dict[str, str]) -> requests.Session:
    done = subprocess.run(
        [sys.executable, "-m", "tapeview", "token", "create", "t", "--scope", "read"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    client = requests.Session()
    client.headers["Authorization"] = f"Bearer {done.stdout.strip().splitlines()[-1]}"
    return client


def eventually(check: Callable[[], object], seconds: float, what: str) -> object:
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} within {seconds} s; last: {found!r}"
        time.sleep(0.1)


def source(client: requests.Session, base: str, label: str) -> dict:
    r = client.get(f"{base}/api/sources", timeout=TIMEOUT)
    assert r.status_code == 200, r.text[:500]
    return next(s for s in r.json()["items"] if s["label"] == label)


def caught_up(client: requests.Session, base: str, label: str, at_least: int = 1) -> dict | None:
    s = source(client, base, label)
    done = s["total_bytes"] >= at_least and s["indexed_bytes"] == s["total_bytes"]
    return s if done and s["search_behind"] == 0 else None


def tape_names(client: requests.Session, base: str, label: str) -> set[str]:
    r = client.get(f"{base}/api/tapes?source={label}&limit=500", timeout=TIMEOUT)
    assert r.status_code == 200, r.text[:500]
    return {t["label"] for t in r.json()["items"]}


@pytest.mark.parametrize("mode", ["notifications", "polling"])
def test_appends_and_new_tapes_are_indexed_without_any_page_asking(tmp_path: Path, mode: str) -> None:
    folder = bub_folder(tmp_path / "bub")
    home = tmp_path / "home"
    home.mkdir()
    tape = folder / "session_realistic.jsonl"
    polling = ["--polling"] if mode == "polling" else []
    with database(home, {"bub": folder}) as env, serve(env, home, *polling) as (base, _, _):
        client = api_client(env)  # after serve made the database
        first = eventually(lambda: caught_up(client, base, "bub"), 30, "the first pass")
        assert first["indexed_bytes"] > 100_000

        appended = b"".join(bub_line(n) for n in range(900_001, 900_051))
        with tape.open("ab") as f:
            for n in range(0, len(appended), 1000):  # as an agent writes: a few lines at a time
                f.write(appended[n : n + 1000])
                f.flush()
        more = first["total_bytes"] + len(appended)
        now = eventually(lambda: caught_up(client, base, "bub", more), 10, "the appended lines")
        assert now["indexed_bytes"] == now["total_bytes"] == first["total_bytes"] + len(appended)

        (folder / "brand_new.jsonl").write_bytes(bub_line(1, "a new session"))
        eventually(lambda: "brand_new" in tape_names(client, base, "bub"), 10, "the new tape listed")
        (folder / "fork_merged.jsonl").unlink()
        eventually(lambda: "fork_merged" not in tape_names(client, base, "bub"), 10, "the gone tape")


@pytest.mark.parametrize("at_once", [False, True], ids=["gone-a-while", "made-again-at-once"])
def test_a_source_folder_removed_and_made_again_is_watched_again(tmp_path: Path, at_once: bool) -> None:
    """Gone a while, or removed and made again before the watcher looked: the new folder is another
    (its inode number may even be the old one's), which the old watch never hears from."""
    folder = bub_folder(tmp_path / "bub")
    home = tmp_path / "home"
    home.mkdir()
    with database(home, {"bub": folder}) as env, serve(env, home) as (base, _, _):
        client = api_client(env)
        eventually(lambda: caught_up(client, base, "bub"), 30, "the first pass")
        shutil.rmtree(folder)
        if at_once:
            folder.mkdir()
        eventually(lambda: not tape_names(client, base, "bub"), 15, "the tapes of the old folder dropped")
        if at_once:
            time.sleep(1)  # the new folder's first file comes after the watcher's look
        else:
            folder.mkdir()
        (folder / "back_again.jsonl").write_bytes(bub_line(1) + bub_line(2))
        eventually(lambda: tape_names(client, base, "bub") == {"back_again"}, 15, "the new folder's tape")
        eventually(lambda: caught_up(client, base, "bub"), 10, "its tape indexed")
        with (folder / "back_again.jsonl").open("ab") as f:
            f.write(bub_line(3))
        more = 3 * len(bub_line(1))
        eventually(lambda: caught_up(client, base, "bub", more), 10, "an append to it")


@pytest.mark.parametrize("mode", ["notifications", "polling"])
def test_a_link_loop_in_a_source_folder_leaves_the_watcher_indexing_and_beating(
    tmp_path: Path, mode: str
) -> None:
    """A link back up (`loop -> ..`) makes watchfiles refuse the folder ("File system loop found"),
    by notifications and by polling alike: the watcher still follows appends and keeps its heartbeat,
    and says so once, not every two seconds."""
    folder = bub_folder(tmp_path / "bub")
    (folder / "loop").symlink_to("..")
    home = tmp_path / "home"
    home.mkdir()
    tape = folder / "session_realistic.jsonl"
    polling = ["--polling"] if mode == "polling" else []
    with database(home, {"bub": folder}) as env, serve(env, home, *polling) as (base, _, _):
        client = api_client(env)
        first = eventually(lambda: caught_up(client, base, "bub"), 30, "the first pass")
        time.sleep(6)  # a few of the watcher's rounds
        with tape.open("ab") as f:
            f.write(bub_line(900_001))
        more = first["total_bytes"] + len(bub_line(900_001))
        eventually(lambda: caught_up(client, base, "bub", more), 10, "the appended line")
        log = (home / "serve.log").read_text()
        assert log.count("failed (") <= 2, log[-3000:]  # notifications, then polling: once each


def test_the_first_page_answers_before_the_index_of_many_tapes_is_complete(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    body = b"".join(bub_line(n, "words " * 40) for n in range(1, 201))
    for n in range(500):
        (folder / f"tape{n:03}.jsonl").write_bytes(body)
    home = tmp_path / "home"
    home.mkdir()
    with database(home, {"many": folder}) as env, serve(env, home) as (base, link, serving):
        browser = requests.Session()
        assert sign_in_by_link(browser, link, TIMEOUT).status_code == 200  # signed in
        page = browser.get(f"{base}/", timeout=TIMEOUT)
        answered = time.monotonic() - serving
        assert page.status_code == 200
        assert "indexing:" in page.text, page.text[:3000]
        assert answered < 5, answered
        sources = browser.get(f"{base}/sources/", timeout=TIMEOUT).text
        assert "The indexer is running" in sources and "<progress" in sources
        total = len(body) * 500
        eventually(lambda: "indexing:" not in browser.get(f"{base}/", timeout=TIMEOUT).text, 240, "done")
        page = browser.get(f"{base}/sources/", timeout=TIMEOUT).text
        assert f"({100}%)" in page and "last full pass" in page, page[:3000]
        print(f"500 tapes, {total / 1e6:.1f} MB: first page {answered:.2f} s after 'Serving on'")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_index_watch_stops_on_a_signal_with_exit_0(tmp_path: Path, signum: int) -> None:
    folder = bub_folder(tmp_path / "bub")
    home = tmp_path / "home"
    home.mkdir()
    with database(home, {"bub": folder}) as env:
        subprocess.run([sys.executable, "-m", "tapeview", "migrate", "-v0"], env=env, check=True, timeout=60)
        watcher = subprocess.Popen(
            [sys.executable, "-m", "tapeview", "index", "--watch"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert watcher.stdout is not None
            assert "watching 1 source(s) by notifications" in watcher.stdout.readline()
            time.sleep(0.5)  # let it get into the first pass or the watch: either must stop
            watcher.send_signal(signum)
            out, err = watcher.communicate(timeout=20)
        finally:
            if watcher.poll() is None:
                watcher.kill()
                watcher.wait()
        assert watcher.returncode == 0, err[-3000:]
        assert "stopped watching" in out and "Traceback" not in err, err[-3000:]


@pytest.fixture
def watched(db, settings, tmp_path: Path) -> Path:
    folder = bub_folder(tmp_path / "bub")
    settings.TAPEVIEW_SOURCES = f"bub=bub:{folder}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return folder


def test_pages_leave_the_scan_to_a_watcher_whose_heartbeat_is_fresh(viewer_client, watched) -> None:
    discovery.beat(started=True)
    (watched / "while_watched.jsonl").write_bytes(bub_line(1))
    assert "while_watched" not in viewer_client.get("/").content.decode()  # the watcher's to find
    assert "The indexer is running" in viewer_client.get("/sources/").content.decode()

    Indexer.objects.update(beat_at=timezone.now() - discovery.BEAT_STALE - timedelta(seconds=1))
    assert "while_watched" in viewer_client.get("/").content.decode()  # a quiet watcher: pages scan again
    assert "No indexer is running" in viewer_client.get("/sources/").content.decode()


def test_pages_scan_again_once_the_watcher_has_stopped(viewer_client, watched) -> None:
    discovery.beat(started=True)
    discovery.stop_beating()
    (watched / "after_stop.jsonl").write_bytes(bub_line(1))
    assert "after_stop" in viewer_client.get("/").content.decode()
