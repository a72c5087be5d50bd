"""A one-time sign-in link signs in once, even when it is used twice at the same moment; fetching it
uses nothing (its button does), and a new link for someone revokes their older ones."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import requests
from django.db import connection

from tapeview.accounts import signin
from tests.servers import environment, own_database, sign_in_by_link, tapeview_serve


@pytest.mark.django_db(transaction=True)
def test_a_link_used_by_many_requests_at_once_signs_in_exactly_once(shared_db, user_factory) -> None:
    token = signin.issue(user_factory("vera"))
    start, results = threading.Barrier(8), []

    def use() -> None:
        start.wait()
        try:
            user = signin.redeem(token)
            results.append(user.get_username() if user else None)
        finally:
            connection.close()

    threads = [threading.Thread(target=use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("vera") == 1 and results.count(None) == 7


@pytest.mark.django_db
def test_an_expired_link_does_not_sign_in(user_factory) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from tapeview.accounts.models import SignInToken

    token = signin.issue(user_factory("vera"))
    SignInToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert signin.redeem(token) is None


@pytest.mark.django_db
def test_fetching_a_link_leaves_it_unused_and_its_button_signs_in(client, user_factory) -> None:
    link = f"/signin/{signin.issue(user_factory('vera'))}/"
    # What a link scanner or a chat unfurler does: HEAD, then GET, maybe twice.
    assert client.head(link).status_code == 200
    for _ in range(2):
        page = client.get(link)
        assert page.status_code == 200 and "_auth_user_id" not in client.session
        assert '<button type="submit">Sign in as vera</button>' in page.content.decode()
    signed_in = client.post(link)
    assert signed_in.status_code == 302 and signed_in["Location"] == "/"
    assert "_auth_user_id" in client.session
    client.logout()
    assert client.get(link).status_code == 403 and client.post(link).status_code == 403


@pytest.mark.django_db
def test_a_link_for_someone_without_a_password_goes_on_to_set_one(client) -> None:
    link = f"/signin/{signin.issue(signin.ensure_first_admin())}/"
    assert "then you set a password" in client.get(link).content.decode()
    signed_in = client.post(link, follow=True)
    assert signed_in.redirect_chain == [("/password/", 302)]
    assert "Set your password" in signed_in.content.decode()


@pytest.mark.django_db
def test_a_new_link_revokes_the_older_one(client, user_factory) -> None:
    vera = user_factory("vera")
    older, newer = signin.issue(vera), signin.issue(vera)
    olga_link = signin.issue(user_factory("olga"))
    refused = client.get(f"/signin/{older}/")
    assert refused.status_code == 403 and "This sign-in link is not valid" in refused.content.decode()
    assert client.post(f"/signin/{older}/").status_code == 403
    assert client.get(f"/signin/{olga_link}/").status_code == 200  # another person's link stays
    assert client.post(f"/signin/{newer}/").status_code == 302


def test_the_first_start_link_survives_a_link_scanner_and_lets_the_admin_set_a_password(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / "tapes").mkdir(parents=True)
    env = environment(home, f"bub:{home / 'tapes'}")
    with own_database(env, "tapeview_signin") as env, tapeview_serve(env, home) as (_, link, _):
        scanner = requests.Session()
        assert scanner.head(link, timeout=30).status_code == 200
        assert scanner.get(link, timeout=30).status_code == 200
        admin = requests.Session()
        page = sign_in_by_link(admin, link)
        assert page.url.endswith("/password/") and "Set your password" in page.text
        assert scanner.get(link, timeout=30).status_code == 403  # used once, by the button
