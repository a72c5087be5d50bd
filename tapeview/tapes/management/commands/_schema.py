"""The database's tables, brought up to date by whichever command starts first."""

from __future__ import annotations

from django.core.management import call_command
from django.db import connection

# Any number, Tapeview's own: every host of a fleet may start its watcher at once against one
# PostgreSQL, and Django's migrations must not run twice side by side.
MIGRATIONS_LOCK = 0x7461_7065  # "tape"


def migrate() -> None:
    """Apply what migrations are missing (nothing, usually); on PostgreSQL one process at a time."""
    if connection.vendor != "postgresql":
        call_command("migrate", interactive=False, verbosity=0)
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATIONS_LOCK])
    try:
        call_command("migrate", interactive=False, verbosity=0)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATIONS_LOCK])
