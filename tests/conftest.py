"""Shared fixtures: real sample files copied into a temporary directory, signed-in clients, API clients."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

# The same examples on every run and every machine: a property that passes here passes in CI, and a
# failure shows up the same way again. No clock either: Hypothesis's deadline and its "too slow" check
# fail a property on a loaded machine (speed is measured in bench/, not in tests).
hypothesis_settings.register_profile(
    "tapeview",
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
hypothesis_settings.load_profile("tapeview")

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session", autouse=True)
def _own_home(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Tapeview's own files (the handoffs' lock files, the demo data) in a folder of this test
    process's own: the passes and their xdist workers run at once, and none writes to var/."""
    from django.conf import settings

    home = tmp_path_factory.mktemp("home")
    kept = settings.HOME, settings.TAPEVIEW_DEMO_DIR
    settings.HOME, settings.TAPEVIEW_DEMO_DIR = home, home / "demo"
    yield
    settings.HOME, settings.TAPEVIEW_DEMO_DIR = kept


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    """Each test starts with an empty cache: pages drawn by an earlier test (the same fixture file,
    the same row id) are not served to this one."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _fresh_search_counts(monkeypatch) -> None:
    """The search pass's counts kept per process (docs made since the last ANALYZE, the docs whose
    slices the upkeep looks at) start afresh: an earlier test's docs are not this one's."""
    from tapeview.search import catchup, slices

    monkeypatch.setattr(catchup, "_unanalyzed", 0)
    monkeypatch.setattr(slices, "_made", {})


@pytest.fixture
def bub_samples(tmp_path: Path) -> Path:
    """The real Bub sample files (a flat folder of tapes), copied so tests may change them."""
    root = tmp_path / "samples"
    shutil.copytree(FIXTURES / "bub", root, ignore=shutil.ignore_patterns("tapes_dir"))
    return root


@pytest.fixture
def bub_home(tmp_path: Path) -> Path:
    """A real `$BUB_HOME/tapes` directory: sessions, a sidecar, an archive, an empty sidecar archive."""
    root = tmp_path / "tapes"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", root)
    return root


@pytest.fixture
def user_factory(db, settings):
    from django.contrib.auth.models import User

    from tapeview.accounts.roles import set_role

    # A fast hasher: these passwords protect nothing, and PBKDF2 would slow every test.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

    def make(name: str = "vera", role: str = "viewer") -> User:
        user = User.objects.create_user(name, password="a long test password")
        set_role(user, role)
        return user

    return make


@pytest.fixture
def viewer_client(client, user_factory):
    client.force_login(user_factory("vera", "viewer"))
    return client


@pytest.fixture
def served(db, settings, bub_home: Path, bub_samples: Path) -> dict[str, Path]:
    """The dashboard configured over both sample folders and indexed, as `tapeview serve` does."""
    from tapeview.tapes import discovery

    settings.TAPEVIEW_SOURCES = f"home=bub:{bub_home},samples=bub:{bub_samples}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return {"home": bub_home, "samples": bub_samples}


@pytest.fixture
def operator_client(client, user_factory):
    client.force_login(user_factory("olga", "operator"))
    return client


@pytest.fixture
def memory_sources(db, settings, tmp_path: Path) -> dict[str, Path]:
    """Real memory files of every family (copied), configured as sources and indexed."""
    from memory_admin import catalog
    from tapeview.tapes import discovery

    roots = {
        "bub": tmp_path / "bub",
        "nanobot": tmp_path / "nanobot_memory" / "current",
        "yachiyo": tmp_path / "yachiyo_memory" / "data",
        "araliya": tmp_path / "araliya_kv",
    }
    (tmp_path / "bub").mkdir()
    for name in ("hand_memory_zone.jsonl", "session_realistic.jsonl"):
        shutil.copy(FIXTURES / "bub" / name, tmp_path / "bub" / name)
    for fixture, name in (
        ("nanobot_memory", "nanobot_memory"),
        ("yachiyo_memory", "yachiyo_memory"),
        ("araliya", "araliya_kv"),
    ):
        shutil.copytree(FIXTURES / fixture, tmp_path / name)
    settings.TAPEVIEW_SOURCES = ",".join(f"{kind}={kind}:{path}" for kind, path in roots.items())
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    discovery.sync()
    catalog.sync_stores()
    return roots


# API clients that send a Bearer token, as a service would.


class Api:
    """The Django test client with `Authorization: Bearer <token>` and JSON bodies."""

    def __init__(self, client: Client, token: str | None) -> None:
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, path: str, **params: Any):
        return self.client.get(path, params, headers=self.headers)

    def post(self, path: str, body: Any = None, **kwargs: Any):
        return self.client.post(path, body, content_type="application/json", headers=self.headers, **kwargs)

    def put(self, path: str, body: Any = None):
        return self.client.put(path, body, content_type="application/json", headers=self.headers)


@pytest.fixture
def read_token(db) -> str:
    from tapeview.accounts import tokens

    return tokens.create("reader", "read")[1]


@pytest.fixture
def write_token(db) -> str:
    from tapeview.accounts import tokens

    return tokens.create("writer", "write")[1]


@pytest.fixture
def reader(read_token: str) -> Api:
    return Api(Client(), read_token)


@pytest.fixture
def writer(write_token: str) -> Api:
    return Api(Client(), write_token)


@pytest.fixture
def anonymous(db) -> Api:
    return Api(Client(), None)


@pytest.fixture
def idle(settings) -> None:
    """Tapes count as idle at once (the agent's quiet period is for live agents)."""
    settings.TAPEVIEW_QUIET_SECONDS = 0


@pytest.fixture
def shared_db(transactional_db, tmp_path: Path):
    """The index in a database every thread shares as the server's processes do.

    On SQLite the test database is in memory with a shared cache, whose table locks fail at once
    ("database table is locked") instead of waiting as the file database `tapeview serve` uses
    does; so the threads get a migrated file database configured as in production.
    """
    from django import db
    from django.core.management import call_command

    if db.connection.vendor != "sqlite":
        yield
        return
    config = db.connections.settings[db.DEFAULT_DB_ALIAS]  # what every thread's new connection is made from
    in_memory, name = db.connections[db.DEFAULT_DB_ALIAS], config["NAME"]
    config["NAME"] = str(tmp_path / "index.sqlite3")
    db.connections[db.DEFAULT_DB_ALIAS] = db.connections.create_connection(db.DEFAULT_DB_ALIAS)
    try:
        call_command("migrate", verbosity=0, interactive=False)
        yield
    finally:
        db.connection.close()
        config["NAME"] = name
        db.connections[db.DEFAULT_DB_ALIAS] = in_memory


@pytest.fixture
def page():
    """A page of a fresh headless Chromium (the browser tests' `page`), closed afterwards."""
    from playwright.sync_api import sync_playwright

    from tests.browser import ARTIFACTS, CHROMIUM, FLAGS, VIEWPORT

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser.new_page(viewport=VIEWPORT, accept_downloads=True)
        browser.close()


@pytest.fixture
def site(live_server, settings, bub_home: Path, bub_samples: Path) -> str:
    """The live server over both Bub sample folders, indexed: what the browser tests open."""
    from tapeview.tapes import discovery

    settings.TAPEVIEW_SOURCES = f"home=bub:{bub_home},samples=bub:{bub_samples}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    discovery.sync()
    return live_server.url


LONG_MODULE = 400  # lines; a report for the reader, not a rule: modules are split by job


def pytest_terminal_summary(terminalreporter: Any) -> None:
    root = Path(__file__).resolve().parents[1]
    long = sorted(
        (n, p.relative_to(root))
        for top in ("tapeview", "memory_admin")
        for p in (root / top).rglob("*.py")
        if "migrations" not in p.parts and (n := len(p.read_text().splitlines())) > LONG_MODULE
    )
    if long:
        terminalreporter.write_sep("-", f"modules over {LONG_MODULE} lines (a report, not a failure)")
        for n, rel in reversed(long):
            terminalreporter.write_line(f"{n:5d}  {rel}")
