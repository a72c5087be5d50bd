"""The database's tables, brought up to date by whichever command starts first; the stored costs
priced again if the price table changed since (tapes.costs)."""

from __future__ import annotations

from django.core.management import CommandError, call_command
from django.db import connection

from tapeview.tapes import costs, prices

# Any number, Tapeview's own: every host of a fleet may start its watcher at once against one
# PostgreSQL, and Django's migrations must not run twice side by side.
MIGRATIONS_LOCK = 0x7461_7065  # "tape"


def migrate() -> None:
    """Apply what migrations are missing (nothing, usually); on PostgreSQL one process at a time."""
    if connection.vendor != "postgresql":
        call_command("migrate", interactive=False, verbosity=0)
    else:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [MIGRATIONS_LOCK])
        try:
            call_command("migrate", interactive=False, verbosity=0)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [MIGRATIONS_LOCK])
    try:
        prices.table()  # a broken TAPEVIEW_PRICES file stops the start, saying what is wrong
    except prices.PricesInvalid as exc:
        raise CommandError(f"TAPEVIEW_PRICES: {exc}") from None
    costs.reprice()
