"""A one-time sign-in link signs in once, even when it is used twice at the same moment."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from tapeview.accounts import signin


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
