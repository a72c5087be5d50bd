"""`tapeview serve --no-index`: a web tier that leaves the index to `tapeview index` (in a fleet, the
agent hosts' watchers): its pages and API show what is indexed, never what the files hold beyond."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import requests

from tests.servers import environment, own_database, sign_in_by_link, tapeview_serve
from tests.tapes.test_watcher import api_client, bub_line

TIMEOUT = 30


def tapeview_index(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tapeview", "index"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]


def test_a_web_tier_shows_new_entries_only_once_tapeview_index_ran(tmp_path: Path) -> None:
    folder = tmp_path / "bub"
    folder.mkdir()
    tape = folder / "grows.jsonl"
    tape.write_bytes(b"".join(bub_line(n, "before") for n in (1, 2, 3)))
    home = tmp_path / "home"
    home.mkdir()
    env = environment(home, f"bub=bub:{folder}", TAPEVIEW_REFRESH_SECONDS="0")
    with own_database(env, "tapeview_noindex") as env, tapeview_serve(env, home, "--no-index") as served:
        base, link, _ = served
        browser = requests.Session()
        assert sign_in_by_link(browser, link, TIMEOUT).status_code == 200  # signed in
        api = api_client(env)

        assert "grows" not in browser.get(f"{base}/", timeout=TIMEOUT).text  # no page scans the sources
        tapeview_index(env)
        listed = api.get(f"{base}/api/tapes", timeout=TIMEOUT).json()["items"]
        assert [(t["label"], t["entries"]) for t in listed] == [("grows", 3)]
        key = listed[0]["id"]

        with tape.open("ab") as f:
            f.write(bub_line(4, "after") + bub_line(5, "after"))
        (folder / "newcomer.jsonl").write_bytes(bub_line(1))
        for _ in range(2):  # a page, then a page that would have found the first one's work
            assert "after 4" not in browser.get(f"{base}/tapes/{key}/", timeout=TIMEOUT).text
            assert api.get(f"{base}/api/tapes/{key}", timeout=TIMEOUT).json()["entries"] == 3
            assert "newcomer" not in browser.get(f"{base}/", timeout=TIMEOUT).text

        tapeview_index(env)
        assert "after 4" in browser.get(f"{base}/tapes/{key}/", timeout=TIMEOUT).text
        assert api.get(f"{base}/api/tapes/{key}", timeout=TIMEOUT).json()["entries"] == 5
        assert "newcomer" in browser.get(f"{base}/", timeout=TIMEOUT).text
    assert "Traceback" not in (home / "serve.log").read_text()
