"""The `tapeview` command line: sources, users, sign-in links, indexing."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from tapeview import home
from tapeview.accounts import signin
from tapeview.accounts.roles import has_role, role_of
from tapeview.sources import SourceSpecError, parse_sources
from tapeview.tapes.models import Tape
from tests.servers import environment


def test_source_specs_take_a_label_a_kind_and_a_path(tmp_path: Path) -> None:
    a, b, c = parse_sources([f"work=bub:{tmp_path}", f"bub:{tmp_path}/tapes", f"bub:{tmp_path}"])
    assert (a.label, a.kind, a.path) == ("work", "bub", tmp_path)
    assert b.label == tmp_path.name  # "tapes" says nothing: the folder above names it
    assert c.label == f"{tmp_path.name}-2"


def test_sources_come_comma_separated_from_the_environment(tmp_path: Path) -> None:
    specs = parse_sources(f"a=bub:{tmp_path}/x, b=bub:{tmp_path}/y")
    assert [s.label for s in specs] == ["a", "b"]


@pytest.mark.parametrize("spec", ["", "a=", "zork:/tmp"])
def test_bad_source_specs_get_a_clear_error(spec: str) -> None:
    with pytest.raises(SourceSpecError):
        parse_sources([spec])


@pytest.mark.django_db
def test_index_command_indexes_the_given_sources(bub_home: Path) -> None:
    out = io.StringIO()
    call_command("index", f"home=bub:{bub_home}", stdout=out)
    assert "6 tapes, 6 indexed" in out.getvalue()
    assert Tape.objects.get(label="cli:local").entries == 97


def test_a_bare_path_whose_kind_cannot_be_told_is_kept_as_unknown(tmp_path: Path) -> None:
    (spec,) = parse_sources([f"odd={tmp_path}"])
    assert (spec.kind, spec.known, str(spec)) == ("unknown", False, f"odd={tmp_path}")


@pytest.mark.django_db
def test_index_command_warns_of_a_source_of_unknown_kind_and_indexes_the_others(
    bub_home: Path, tmp_path: Path
) -> None:
    (tmp_path / "odd").mkdir()
    out = io.StringIO()
    call_command("index", str(tmp_path / "odd"), f"home=bub:{bub_home}", stdout=out)
    assert f"problem: odd: cannot tell what {tmp_path / 'odd'} holds" in out.getvalue()
    assert "6 tapes, 6 indexed" in out.getvalue()


@pytest.mark.django_db
def test_index_command_rejects_an_unknown_kind() -> None:
    with pytest.raises(CommandError, match="unknown source kind"):
        call_command("index", "zork:/tmp")


@pytest.mark.django_db
def test_createuser_reads_the_password_from_stdin(monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a long test password\n"))
    call_command("createuser", "olga", "--role", "operator", "--password-stdin", stdout=io.StringIO())
    user = User.objects.get(username="olga")
    assert user.check_password("a long test password")
    assert role_of(user) == "operator" and has_role(user, "viewer") and not has_role(user, "admin")


@pytest.mark.django_db
def test_createuser_refuses_a_weak_password(monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("password\n"))
    with pytest.raises(CommandError):
        call_command("createuser", "olga", "--password-stdin")
    assert not User.objects.exists()


@pytest.mark.django_db
def test_the_first_start_creates_an_admin_without_a_password() -> None:
    admin = signin.ensure_first_admin()
    assert admin is not None and not admin.has_usable_password() and role_of(admin) == "admin"
    assert signin.ensure_first_admin() is None  # only when there are no users at all


@pytest.mark.django_db
def test_a_sign_in_link_works_once(client) -> None:
    admin = signin.ensure_first_admin()
    token = signin.issue(admin)
    first = client.post(f"/signin/{token}/")
    assert first.status_code == 302 and first["Location"] == "/password/"
    client.logout()
    assert client.post(f"/signin/{token}/").status_code == 403
    assert client.get("/signin/not-a-token/").status_code == 403


@pytest.mark.django_db
def test_signinlink_prints_a_link_for_a_user(user_factory, settings, tmp_path, monkeypatch) -> None:
    # A home of its own: the developer's `tapeview serve --port N` remembers its address in theirs.
    settings.HOME = tmp_path
    monkeypatch.delenv("TAPEVIEW_BASE_URL", raising=False)
    user_factory("vera")
    out = io.StringIO()
    call_command("signinlink", "vera", stdout=out)
    assert out.getvalue().startswith("http://127.0.0.1:8000/signin/")
    home.remember_base_url(tmp_path, "http://127.0.0.1:8792")  # as serve does
    out = io.StringIO()
    call_command("signinlink", "vera", stdout=out)
    assert out.getvalue().startswith("http://127.0.0.1:8792/signin/")


def test_the_console_script_reaches_every_management_command(tmp_path: Path) -> None:
    env = {"TAPEVIEW_HOME": str(tmp_path), "PATH": str(Path(sys.executable).parent)}
    out = subprocess.run(
        [sys.executable, "-m", "tapeview", "help"], capture_output=True, text=True, env=env, check=True
    ).stdout
    for command in ("serve", "index", "demo", "createuser", "signinlink", "migrate"):
        assert command in out


@pytest.mark.django_db
def test_serve_creates_the_first_admin_and_prints_a_sign_in_link(
    monkeypatch, settings, bub_home, tmp_path
) -> None:
    settings.HOME = tmp_path
    served = {}
    monkeypatch.setattr(
        "waitress.create_server", lambda app, **kw: served.update(kw) or SimpleNamespace(run=lambda: None)
    )
    monkeypatch.setenv("TAPEVIEW_SOURCES", "")  # serve sets it for its workers; undo that after
    out = io.StringIO()
    # --no-index: the background indexer would write beside this test's transaction; it is tested
    # with the real server in tests/tapes/test_watcher.py.
    call_command("serve", f"home=bub:{bub_home}", "--port", "8123", "--no-index", stdout=out)
    text = out.getvalue()
    link = re.search(r"http://127\.0\.0\.1:8123/signin/([\w-]+)/", text)
    assert link and "created the admin 'admin'" in text
    assert signin.redeem(link.group(1)).get_username() == "admin"
    assert served == {
        "host": "127.0.0.1",
        "port": 8123,
        "threads": 8,
        "ident": "tapeview",
        "clear_untrusted_proxy_headers": True,
    }
    assert f"home=bub:{bub_home}" in settings.TAPEVIEW_SOURCES
    again = io.StringIO()
    call_command("signinlink", "admin", stdout=again)  # a new link, on the port the server took
    assert again.getvalue().startswith("http://127.0.0.1:8123/signin/")


def test_serve_on_a_port_in_use_says_so_in_one_line(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_A_PORT], stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True
    )
    try:
        port = int(holder.stdout.readline())  # bound and listening, in a process of its own
        env = environment(tmp_path, "")
        command = [sys.executable, "-m", "tapeview", "serve", "--port", str(port), "--no-index"]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    finally:
        holder.stdin.close()
        holder.wait(10)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"tapeview: port {port} is in use\n")


HOLD_A_PORT = """
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
sys.stdin.read()
"""


def test_help_lists_tapeviews_own_commands_first_and_djangos_under_their_heading(tmp_path: Path) -> None:
    env = {"TAPEVIEW_HOME": str(tmp_path), "PATH": str(Path(sys.executable).parent)}
    out = subprocess.run(
        [sys.executable, "-m", "tapeview", "help"], capture_output=True, text=True, env=env, check=True
    ).stdout
    ours, _, django = out.partition("\nDjango:\n")
    names = [line.split()[0] for line in ours.split("Commands:\n")[1].splitlines() if line[2:3] != " "]
    assert names[0] == "serve"
    assert {"index", "show", "search", "demo", "createuser", "signinlink", "token"} <= set(names)
    assert "  serve       Serve the dashboard over the given sources" in ours
    assert not {"flush", "dbshell", "startproject", "migrate"} & set(names)
    assert {"flush", "dbshell", "startproject", "migrate"} <= set(django.split())
