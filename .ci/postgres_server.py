"""Run a command against a throwaway PostgreSQL server: `python .ci/postgres_server.py -- CMD ...`.

Starts a cluster in a temporary directory on a Unix socket (no TCP), exports
TAPEVIEW_DATABASE_URL for the command, and removes everything afterwards. PostgreSQL refuses
to run as root, so as root the server runs as the `postgres` user.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PORT = "54329"


def pg_bin(name: str) -> str:
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None
    )
    if not found:
        sys.exit(
            f"PostgreSQL's {name} was not found. Install the server (Debian: apt-get install postgresql) "
            "or run `make test-sqlite` for the SQLite pass only."
        )
    return found


def as_server_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def server() -> Iterator[tuple[Path, str]]:
    """A throwaway server, stopped and removed afterwards: its socket directory and port."""
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    root = Path(tempfile.mkdtemp(prefix="tapeview-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    log = root / "server.log"
    try:
        subprocess.run(
            as_server_user(
                [initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        options = f"-k {sock} -p {PORT} -c listen_addresses='' -c fsync=off -c full_page_writes=off"
        subprocess.run(
            as_server_user([pg_ctl, "-D", str(data), "-l", str(log), "-o", options, "-w", "start"]),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        yield sock, PORT
    finally:
        if data.exists():
            subprocess.run(
                as_server_user([pg_ctl, "-D", str(data), "-m", "fast", "stop"]), stdout=subprocess.DEVNULL
            )
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1 :] if "--" in argv else argv
    # `make test` starts this pass in the background, where the shell hands over SIGINT ignored and
    # every child would inherit that (a test that stops `tapeview show --follow` with Ctrl-C would
    # wait forever): a Python handler is reset to the default in each child.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with server() as (sock, port):
        env = dict(os.environ, TAPEVIEW_DATABASE_URL=f"postgres://postgres@/tapeview?host={sock}&port={port}")
        return subprocess.run(command, env=env).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
