"""Starting out: the `tapeview` command on the PATH, demo data that survives `make run`, one-line 403s."""

from __future__ import annotations

import io
import logging
import os
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

REPO = Path(__file__).resolve().parents[2]
TARGET = REPO / ".venv" / "bin" / "tapeview"


def make_link(bindir: Path, path: str) -> str:
    env = {**os.environ, "PATH": path}
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", "link", f"BINDIR={bindir}"],
        cwd=REPO, env=env, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout


def test_setup_links_tapeview_and_says_how_to_reach_it_when_not_on_path(tmp_path: Path) -> None:
    out = make_link(tmp_path / "bin", "/usr/bin:/bin")
    assert (tmp_path / "bin" / "tapeview").readlink() == TARGET
    assert f'export PATH="{tmp_path / "bin"}:$PATH"' in out


def test_setup_says_nothing_more_when_the_folder_is_on_path(tmp_path: Path) -> None:
    out = make_link(tmp_path / "bin", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    assert out.strip() == f"tapeview: linked {tmp_path / 'bin' / 'tapeview'} -> {TARGET}"


def test_setup_leaves_another_tapeview_program_alone(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tapeview").write_text("#!/bin/sh\n")
    out = make_link(tmp_path / "bin", "/usr/bin:/bin")
    assert (tmp_path / "bin" / "tapeview").read_text() == "#!/bin/sh\n"
    assert "is another program, left alone" in out


def demo(*args: str) -> str:
    out = io.StringIO()
    call_command("demo", *args, stdout=out)
    return out.getvalue()


def test_demo_data_is_written_once_and_edits_survive_the_next_start(settings, tmp_path: Path) -> None:
    settings.TAPEVIEW_DEMO_DIR = tmp_path / "demo"
    assert "wrote" in demo()
    edited = next((tmp_path / "demo" / "bub" / "tapes").glob("*.jsonl"))
    edited.write_text("my edit\n")
    again = demo()
    assert "wrote" not in again and "`tapeview demo --reset` writes it afresh" in again
    assert edited.read_text() == "my edit\n"


def test_demo_reset_writes_it_afresh_and_a_missing_family_is_written_back(settings, tmp_path: Path) -> None:
    settings.TAPEVIEW_DEMO_DIR = tmp_path / "demo"
    demo()
    edited = next((tmp_path / "demo" / "bub" / "tapes").glob("*.jsonl"))
    edited.write_text("my edit\n")
    assert "wrote" in demo("--reset")
    assert edited.read_text() != "my edit\n"
    (tmp_path / "demo" / "yachiyo").rename(tmp_path / "gone")
    out = demo()
    assert (tmp_path / "demo" / "yachiyo").is_dir() and "kept the demo data" in out


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/users/", "/users/\nFAKE 200 line"])
def test_a_refused_page_is_one_line_with_method_path_and_user(viewer_client, caplog, path: str) -> None:
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert viewer_client.get(path).status_code in (403, 404)
    [record] = [r for r in caplog.records if r.name == "django.request"]
    line = record.getMessage()
    assert record.exc_info is None and "\n" not in line
    assert line.startswith(f"{record.status_code} GET /users/") and line.count(" by vera: ") == 1


@pytest.mark.django_db
def test_a_failed_csrf_check_is_one_line_with_method_path_and_user(user_factory, caplog) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user_factory("olga", "operator"))
    with caplog.at_level(logging.WARNING, logger="django.security.csrf"):
        assert client.post("/users/", {}).status_code == 403
    [record] = [r for r in caplog.records if r.name == "django.security.csrf"]
    assert record.getMessage() == "403 POST /users/ by olga: Forbidden (CSRF cookie not set.)"
