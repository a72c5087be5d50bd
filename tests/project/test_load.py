"""The bounded load run (bench/load/run.py) against the production server: no 5xx under load.

It runs on whichever index database the suite runs on: SQLite, or the PostgreSQL server of
`make test-postgres` (TAPEVIEW_DATABASE_URL), where the run makes and drops a database of its own.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[2] / "bench" / "load" / "run.py"


@pytest.mark.load
def test_thirty_users_beside_a_live_agent_get_no_5xx() -> None:
    # Locust patches the standard library with gevent when imported: it only runs as a process of its own.
    assert importlib.util.find_spec("locust"), "locust is missing: pip install -e '.[test]'"
    done = subprocess.run(
        [sys.executable, str(RUN), "--users", "30", "--seconds", "20"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    totals = re.search(
        r"^requests: (\d+), failures: \d+, 5xx: (\d+), connection errors: (\d+)$", output, re.M
    )
    assert totals, output[-6000:]
    requests, server_errors, connection_errors = map(int, totals.groups())
    assert requests > 0 and server_errors == 0 and connection_errors == 0, output[-6000:]
    assert re.search(r"^all\s+\d+\s+\d+\s+0\s+\d+\s+\d+\s+\d+$", output, re.M), output[-6000:]
