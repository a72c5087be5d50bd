"""Shared fixtures: real sample tapes copied into a temporary directory, signed-in clients."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


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

    from tapeview.roles import set_role

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
    from tapeview import index

    settings.TAPEVIEW_SOURCES = f"home=bub:{bub_home},samples=bub:{bub_samples}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    index.sync()
    return {"home": bub_home, "samples": bub_samples}


@pytest.fixture
def operator_client(client, user_factory):
    client.force_login(user_factory("olga", "operator"))
    return client


@pytest.fixture
def memory_sources(db, settings, tmp_path: Path) -> dict[str, Path]:
    """Real memory files of every family (copied), configured as sources and indexed."""
    from memory_admin import service
    from tapeview import index

    roots = {
        "bub": tmp_path / "bub",
        "nanobot": tmp_path / "nanobot_memory" / "current",
        "yachiyo": tmp_path / "yachiyo_memory" / "data",
        "araliya": tmp_path / "araliya_kv",
    }
    (tmp_path / "bub").mkdir()
    for name in ("hand_memory_zone.jsonl", "session_realistic.jsonl"):
        shutil.copy(FIXTURES / "bub" / name, tmp_path / "bub" / name)
    for name in ("nanobot_memory", "yachiyo_memory", "araliya_kv"):
        shutil.copytree(FIXTURES / name, tmp_path / name)
    settings.TAPEVIEW_SOURCES = ",".join(f"{kind}={kind}:{path}" for kind, path in roots.items())
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    index.sync()
    service.sync_stores()
    return roots
