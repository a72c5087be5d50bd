"""SQLite's temporary files' folder full (a small /tmp filled by another program): a real `tapeview
serve` still makes a tape of several batches of wide entries searchable, as its temporary data (the
search pass's batch waiting for its statements, statement journals, sorts) is kept in memory."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.servers import environment, run_url, tapeview_serve
from tests.tapes.test_watcher import api_client

TIMEOUT = 30


@pytest.fixture
def temp_folder(tmp_path: Path):
    """A real 8 MB tmpfs, for SQLITE_TMPDIR: room for the migrations, filled up later."""
    root = tmp_path / "tmp"
    root.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI is)")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(root)], check=True)
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(root)], check=True)


def fill(root: Path) -> None:
    with open(root / "filler", "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)


@pytest.mark.skipif(bool(run_url()), reason="SQLite's temporary files")
def test_a_full_temporary_folder_does_not_stop_the_search_pass(tmp_path: Path, temp_folder: Path) -> None:
    folder, home = tmp_path / "bub", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    env = environment(home, f"bub=bub:{folder}", SQLITE_TMPDIR=str(temp_folder))
    with tapeview_serve(env, home) as (base, _, _):
        api = api_client(env)
        fill(temp_folder)
        filler = " ".join(f"word{n}" for n in range(1800))  # about 16 KB of text an entry
        lines = [
            json.dumps(
                {
                    "id": n,
                    "kind": "message",
                    "payload": {"role": "user", "content": f"wide{n} {filler}"},
                    "meta": {},
                    "date": "2026-01-02T10:00:00.123456+00:00",
                }
            )
            for n in range(1, 2001)
        ]
        (folder / "wide.jsonl").write_text("\n".join(lines) + "\n")  # 32 MB: batches of 16 MB
        deadline = time.monotonic() + 90
        while True:
            (source,) = api.get(f"{base}/api/sources", timeout=TIMEOUT).json()["items"]
            if source["indexed_bytes"] and source["search_behind"] == 0:
                break
            assert time.monotonic() < deadline, source
            time.sleep(0.5)
        found = api.get(f"{base}/api/search", params={"q": "wide1999"}, timeout=TIMEOUT).json()
        assert [hit["pos"] for hit in found["items"]] == [1999]
    log = (home / "serve.log").read_text()
    assert "Traceback" not in log and "disk is full" not in log, log[-3000:]
