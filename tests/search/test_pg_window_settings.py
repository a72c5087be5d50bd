"""On PostgreSQL, the settings a windowed search plans its queries under (no parallel workers, room for
its GIN bitmaps) are its own: a caller's transaction gets its own back, and finds what it found."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from tapeview.search import backends, catchup, engine, windows
from tests.search.test_scale import big, ranked, windows_taken  # noqa: F401  (big: a fixture)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif("connection.vendor != 'postgresql'", reason="PostgreSQL's settings"),
]


def settings() -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT current_setting('{windows.WORKERS}'), current_setting('work_mem')")
        return cursor.fetchone()


def test_a_windowed_search_in_a_transaction_leaves_its_settings_as_they_were(big, monkeypatch):  # noqa: F811
    catchup.catch_up()
    backends.PostgreSQL().analyze()
    monkeypatch.setattr(backends, "CANDIDATES", 40)
    monkeypatch.setattr(engine, "WINDOW", 20)
    monkeypatch.setattr(windows, "FEW", 0.5)
    outside = ranked("sparse")
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL work_mem = '5MB'")
            cursor.execute(f"SET LOCAL {windows.WORKERS} = 3")
        before = settings()
        assert windows_taken("sparse") >= 1
        assert ranked("sparse") == outside
        assert settings() == before == ("3", "5MB")
