"""What every benchmark here shares: Django in a throwaway TAPEVIEW_HOME, a signed-in viewer, timers.

The database is SQLite in that home unless TAPEVIEW_DATABASE_URL names one: a PostgreSQL URL
(from `.ci/postgres_server.py`) gets a database of this run's own, dropped at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_databases = ExitStack()
atexit.register(_databases.close)


def start_django(home: Path | None = None) -> Path:
    """Set up Django and migrate its database; returns TAPEVIEW_HOME.

    Without `home`: a fresh home (removed at exit) and, on PostgreSQL, a database of its own.
    With `home`: the home and database another bench process made (its environment says which).
    """
    from tests.servers import own_database

    if home is None:
        home = Path(tempfile.mkdtemp(prefix="tapeview-bench-"))
        atexit.register(shutil.rmtree, home, ignore_errors=True)
        # A PostgreSQL server's URL names a database nobody made: the run makes its own on that server.
        os.environ.update(_databases.enter_context(own_database(dict(os.environ), "tapeview_bench")))
    os.environ["TAPEVIEW_HOME"] = str(home)
    os.environ["DJANGO_SETTINGS_MODULE"] = "tapeview.settings"
    os.environ.setdefault("TAPEVIEW_SECRET_KEY", "bench")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return home


def viewer_client() -> Any:
    """A Django test client signed in as a viewer."""
    from django.contrib.auth.models import User
    from django.test import Client

    from tapeview.accounts.roles import set_role

    user, _ = User.objects.get_or_create(username="bench")
    set_role(user, "viewer")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(user)
    return client


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds `fn` took, and what it returned."""
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def upkeep(prefix: str = "") -> None:
    """The search index's upkeep after a bench's pass (PostgreSQL's fresh docs moved into the GIN
    index, then its slices: all of them), timed."""
    from tapeview.search import backends

    moving_s, _ = timed(lambda: backends.current().refine(None))
    seconds, _ = timed(lambda: backends.current().tidy(whole=True))
    print(f"{prefix}the search index's upkeep after its pass: {moving_s:.0f} s + {seconds:.0f} s", flush=True)


def median_ms(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """The median of `runs` calls of `fn` in milliseconds, and what the last one returned."""
    times, result = [], None
    for _ in range(runs):
        seconds, result = timed(fn)
        times.append(seconds * 1000)
    return statistics.median(times), result


def raw_parse(path: Path, offset: int = 0, runs: int = 3) -> tuple[float, int]:
    """The raw limit: seconds to read the lines of `path` after `offset` and `orjson.loads` each, and
    how many lines: what any indexer of the file must at least do. The median of `runs` reads, after
    an untimed one where there are several: the file is then in the page cache, as it is for the
    indexer timed after it (a first read from disk took 0.74 s of the real tape against 0.55 s
    warm, and flattered the ratio)."""
    if runs > 1:
        _raw_once(path, offset)
    times, counts = zip(*(_raw_once(path, offset) for _ in range(runs)), strict=True)
    return statistics.median(times), counts[0]


def _raw_once(path: Path, offset: int) -> tuple[float, int]:
    n = 0
    start = time.perf_counter()
    with path.open("rb", buffering=1 << 20) as f:
        f.seek(offset)
        for line in f:
            orjson.loads(line)
            n += 1
    return time.perf_counter() - start, n
