"""Changes to people and API tokens are rows of the audit log, as the admins' audit page shows them."""

from __future__ import annotations

import io
import re
from html import unescape

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from tapeview.accounts import tokens
from tapeview.accounts.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, user_factory):
    client.force_login(user_factory("ada", "admin"))
    return client


def audit_rows(client) -> list[list[str]]:
    """The audit page's rows, newest first: each cell's text."""
    page = client.get("/audit/").content.decode()
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [
        [
            " ".join(unescape(re.sub(r"<[^>]+>", " ", cell)).split())
            for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        for row in rows
    ]


def test_adding_a_person_changing_their_role_and_locking_them_out_are_audited(admin_client) -> None:
    admin_client.post("/users/", {"username": "olga", "role": "viewer"})
    olga = User.objects.get(username="olga")
    admin_client.post(f"/users/{olga.pk}/role", {"role": "operator"})
    admin_client.post(f"/users/{olga.pk}/active")
    admin_client.post(f"/users/{olga.pk}/active")
    rows = [row[1:6] for row in audit_rows(admin_client)]
    assert rows == [
        ["ada", "olga", "user.unlock", "written", "locked out → can sign in"],
        ["ada", "olga", "user.lock", "written", "can sign in → locked out"],
        ["ada", "olga", "user.role", "written", "viewer → operator"],
        ["ada", "olga", "user.add", "written", "– → viewer"],
    ]


def test_a_refused_change_of_ones_own_role_is_no_row(admin_client) -> None:
    ada = User.objects.get(username="ada")
    admin_client.post(f"/users/{ada.pk}/role", {"role": "viewer"})
    admin_client.post(f"/users/{ada.pk}/active")
    assert audit_rows(admin_client) == [["No writes yet."]]


def test_creating_and_revoking_a_token_on_the_page_are_audited_without_the_token(admin_client) -> None:
    page = admin_client.post("/tokens/", {"name": "ingest", "scope": "write"}).content.decode()
    plaintext = re.search(r'<code id="new-token">(tv_[\w-]+)</code>', page).group(1)
    row = ApiToken.objects.get(name="ingest")
    admin_client.post(f"/tokens/{row.pk}/revoke")
    admin_client.post(f"/tokens/{row.pk}/revoke")  # again: it stays revoked the first time
    rows = [row[1:4] for row in audit_rows(admin_client)]
    assert rows == [
        ["ada", "API token ingest (write, no expiry)", "token.revoke"],
        ["ada", "API token ingest (write, no expiry)", "token.create"],
    ]
    assert plaintext not in admin_client.get("/audit/").content.decode()


def test_the_token_command_audits_as_the_command_line(admin_client) -> None:
    call_command("token", "create", "svc", "--scope", "read", "--expires-days", "3", stdout=io.StringIO())
    call_command("token", "revoke", "svc", stdout=io.StringIO())
    until = f"{ApiToken.objects.get(name='svc').expires_at:%Y-%m-%d}"
    rows = [row[1:4] for row in audit_rows(admin_client)]
    assert rows == [
        ["command line", f"API token svc (read, {until})", "token.revoke"],
        ["command line", f"API token svc (read, {until})", "token.create"],
    ]
    assert tokens.state(ApiToken.objects.get(name="svc")) == "revoked"


def test_createuser_is_audited_as_the_command_line(admin_client, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("a long enough password\n"))
    call_command("createuser", "otto", "--role", "operator", "--password-stdin", stdout=io.StringIO())
    assert [row[1:4] for row in audit_rows(admin_client)] == [["command line", "otto", "user.add"]]
