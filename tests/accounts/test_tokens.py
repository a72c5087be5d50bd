"""API tokens: the `tapeview token` command, the admins' tokens page, and what a token may do."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from tapeview.accounts import tokens
from tapeview.accounts.models import ApiToken
from tests.conftest import Api

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("token", *args, stdout=out)
    return out.getvalue()


def test_create_prints_the_token_once_as_its_last_line_and_keeps_only_a_hash(served) -> None:
    out = run("create", "ci-bot", "--scope", "write", "--expires-days", "30")
    token = out.strip().splitlines()[-1]
    assert re.fullmatch(r"tv_[\w-]{40,}", token)
    row = ApiToken.objects.get(name="ci-bot")
    assert (row.scope, row.prefix) == ("write", token[:10]) and row.expires_at is not None
    assert token not in row.digest and token not in run("list")
    assert Api(Client(), token).get("/api/tapes").status_code == 200


def test_the_console_script_prints_the_token_as_the_last_line(tmp_path: Path) -> None:
    env = {"TAPEVIEW_HOME": str(tmp_path), "PATH": str(Path(sys.executable).parent)}
    tapeview = [sys.executable, "-m", "tapeview"]
    subprocess.run([*tapeview, "migrate", "-v0"], env=env, check=True)
    out = subprocess.run(
        [*tapeview, "token", "create", "svc", "--scope", "read"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert out.count("tv_") == 1 and re.fullmatch(r"tv_[\w-]{40,}", out.splitlines()[-1])


def test_list_shows_every_token_with_its_state_never_the_token(db) -> None:
    assert run("list").strip() == "no tokens"
    live = run("create", "live").strip().splitlines()[-1]
    tokens.revoke(tokens.create("old")[0])
    listed = run("list")
    assert re.search(r"live\s+read\s+live\s+tv_", listed) and re.search(r"old\s+read\s+revoked", listed)
    assert live not in listed


def test_revoke_by_name_or_id_makes_the_token_401(served) -> None:
    by_name = run("create", "a").strip().splitlines()[-1]
    by_id = run("create", "b").strip().splitlines()[-1]
    assert "revoked token a" in run("revoke", "a")
    assert "revoked token b" in run("revoke", str(ApiToken.objects.get(name="b").pk))
    for token in (by_name, by_id):
        assert Api(Client(), token).get("/api/tapes").status_code == 401
    with pytest.raises(CommandError, match="no live token 'a'"):
        run("revoke", "a")


def test_a_name_is_taken_until_its_token_is_revoked(db) -> None:
    run("create", "svc")
    with pytest.raises(CommandError, match="exists already"):
        run("create", "svc")
    run("revoke", "svc")
    assert run("create", "svc").strip().splitlines()[-1].startswith("tv_")


@pytest.mark.parametrize("args", [["create", "has space"], ["create", "x", "--expires-days", "0"]])
def test_bad_create_arguments_are_refused(db, args) -> None:
    with pytest.raises(CommandError):
        run(*args)


@pytest.fixture
def admin_client(client, user_factory):
    client.force_login(user_factory("ada", "admin"))
    return client


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_the_tokens_page_is_for_admins_only(client, user_factory, role) -> None:
    client.force_login(user_factory("someone", role))
    assert client.get("/tokens/").status_code == 403
    assert client.post("/tokens/", {"name": "x", "scope": "write"}).status_code == 403
    row = tokens.create("y")[0]
    assert client.post(f"/tokens/{row.pk}/revoke").status_code == 403
    assert (
        not ApiToken.objects.filter(name="x").exists()
        and tokens.state(ApiToken.objects.get(pk=row.pk)) == "live"
    )
    assert "/tokens/" not in client.get("/sources/").content.decode()


def test_anonymous_visitors_are_sent_to_sign_in(client) -> None:
    r = client.get("/tokens/")
    assert r.status_code == 302 and r["Location"].startswith("/login/")


def test_an_admin_creates_a_token_and_sees_it_once(admin_client) -> None:
    assert 'href="/tokens/"' in admin_client.get("/sources/").content.decode()
    page = admin_client.post(
        "/tokens/", {"name": "ingest", "scope": "read", "expires_days": "7"}
    ).content.decode()
    token = re.search(r'<code id="new-token">(tv_[\w-]+)</code>', page).group(1)
    assert tokens.verify(token).created_by.username == "ada"
    again = admin_client.get("/tokens/").content.decode()
    assert token not in again and "ingest" in again and token[:10] in again


def test_an_admin_revokes_a_token(admin_client) -> None:
    row, token = tokens.create("old", "write")
    r = admin_client.post(f"/tokens/{row.pk}/revoke", follow=True)
    assert "Revoked the token old" in r.content.decode()
    assert tokens.verify(token) is None
    assert Api(Client(), token).get("/api/tapes").status_code == 401


def test_a_taken_name_is_refused_on_the_page(admin_client) -> None:
    tokens.create("svc")
    page = admin_client.post("/tokens/", {"name": "svc", "scope": "read"}).content.decode()
    assert "exists already" in page and 'id="new-token"' not in page


def test_a_bad_name_on_the_page_says_which_characters_a_name_may_hold(admin_client) -> None:
    page = admin_client.post("/tokens/", {"name": "my service", "scope": "read"}).content.decode()
    assert "letters, digits or . @ + - _ (no spaces)" in page and 'id="new-token"' not in page
