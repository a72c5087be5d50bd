"""Settings: a bad value stops the start with a clear error; importing them writes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

IMPORT = "import tapeview.settings"


def _import(env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TAPEVIEW_", "DATABASE_URL"))}
    return subprocess.run(
        [sys.executable, "-c", IMPORT],
        env={**base, "TAPEVIEW_HOME": str(tmp_path / "home"), **env},
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("TAPEVIEW_DEBUG", "maybe", "expected true or false"),
        ("TAPEVIEW_QUIET_SECONDS", "soon", "expected a number"),
        ("TAPEVIEW_REFRESH_SECONDS", "-1", "expected a number of at least 0"),
        ("TAPEVIEW_SEARCH_SLICE_DOCS", "many", "expected a whole number"),
        ("TAPEVIEW_SEARCH_SLICE_DOCS", "10", "expected a number of at least 1000"),
        ("TAPEVIEW_TRUSTED_PROXY", "proxy.internal", "expected an IP address"),
        ("TAPEVIEW_DATABASE_URL", "nosuchdb://x", "TAPEVIEW_DATABASE_URL"),
    ],
)
def test_a_bad_value_is_improperly_configured(tmp_path, name, value, says) -> None:
    run = _import({name: value}, tmp_path)
    assert run.returncode != 0
    assert "ImproperlyConfigured" in run.stderr and says in run.stderr


def test_importing_the_settings_writes_no_file(tmp_path) -> None:
    run = _import({}, tmp_path)
    assert run.returncode == 0, run.stderr
    assert not (tmp_path / "home").exists()


def test_the_command_line_makes_the_home_and_a_private_secret_key_once(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAPEVIEW_")}
    env["TAPEVIEW_HOME"] = str(tmp_path / "home")
    for _ in range(2):
        subprocess.run([sys.executable, "-m", "tapeview", "check"], env=env, check=True, capture_output=True)
    key = tmp_path / "home" / "secret_key"
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_text()) >= 50


def test_production_settings_pass_the_deploy_check(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TAPEVIEW_", "DJANGO_ALLOW_ASYNC"))}
    env.update(
        TAPEVIEW_HOME=str(tmp_path), TAPEVIEW_SECURE_COOKIES="true", TAPEVIEW_ALLOWED_HOSTS="tv.example"
    )
    run = subprocess.run(
        [sys.executable, "-m", "tapeview", "check", "--deploy", "--fail-level", "WARNING"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no issues" in run.stdout
