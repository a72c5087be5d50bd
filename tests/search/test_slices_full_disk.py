"""A full disk while the indexer makes PostgreSQL's slices of the GIN index: the `CREATE INDEX` fails
for lack of room, the change is rolled back and logged, `tapeview index` ends well, no half-made
index is left, and search finds what it did. Once there is room again, the slices are made.

The database lives in a tablespace on a small tmpfs (its write-ahead log stays on the real disk, as
a server whose data disk fills keeps its log elsewhere), which a filler file then fills."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from tests.servers import ROOT, environment, run_url

pytestmark = [
    pytest.mark.skipif(not run_url().startswith("postgres"), reason="PostgreSQL's GIN index"),
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root (CI is)"),
]

ENTRIES = 3_000
SEARCH = (
    "from tapeview.search import engine; "
    "print(json.dumps([h.pos for h in engine.search('common', limit=20, order='time')]))"
)


def postgres_server():
    spec = importlib.util.spec_from_file_location("postgres_server", ROOT / ".ci" / "postgres_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server()


def tapeview(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "tapeview", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def searched(env: dict[str, str]) -> list[int]:
    done = tapeview(env, "shell", "-c", f"import json; {SEARCH}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def slices_in(url: str) -> list[tuple[str, bool]]:
    """The slices' indexes, valid or not (a CREATE INDEX cut short would leave one invalid)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT c.relname, i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            r"WHERE c.relname LIKE 'search\_doc\_slice\_%' ORDER BY 1"
        ).fetchall()


def fill(root: Path) -> None:
    with open(root / "filler", "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\0" * 65536)


def test_a_full_disk_leaves_the_slices_as_they_were_and_search_right(tmp_path: Path) -> None:
    folder, home = tmp_path / "bub", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    disk = Path(tempfile.mkdtemp(prefix="tapeview-disk-"))  # where the server's user can reach it
    lines = [
        {"id": n, "kind": "message", "payload": {"role": "user", "content": f"common w{n}"}, "meta": {}}
        for n in range(1, ENTRIES + 1)
    ]
    date = "2026-01-02T10:00:00+00:00"
    (folder / "tape.jsonl").write_text("".join(json.dumps({**e, "date": date}) + "\n" for e in lines))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(disk)], check=True)
    try:
        shutil.chown(disk, "postgres")
        with postgres_server() as (sock, port):
            admin = f"postgresql://postgres@/postgres?host={sock}&port={port}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"CREATE TABLESPACE small LOCATION '{disk}'")
                conn.execute("CREATE DATABASE full_disk TABLESPACE small")
            url = f"postgresql://postgres@/full_disk?host={sock}&port={port}"
            env = environment(home, f"bub=bub:{folder}", TAPEVIEW_DATABASE_URL=url)
            # Slices of more docs than there are: `tapeview index` makes none.
            tapeview({**env, "TAPEVIEW_SEARCH_SLICE_DOCS": "100000"}, "index")
            newest = list(range(ENTRIES, ENTRIES - 20, -1))
            assert searched(env) == newest and slices_in(url) == []

            fill(disk)
            env["TAPEVIEW_SEARCH_SLICE_DOCS"] = "1000"
            full = tapeview(env, "index")
            assert "slices were left as they were" in full.stderr, full.stderr[-3000:]
            assert "No space left on device" in full.stderr, full.stderr[-3000:]
            assert slices_in(url) == []  # rolled back: nothing half made
            assert searched(env) == newest

            (disk / "filler").unlink()
            tapeview(env, "index")
            made = slices_in(url)
            assert len(made) >= 2 and all(valid for _, valid in made), made
            assert searched(env) == newest
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)
        disk.rmdir()
