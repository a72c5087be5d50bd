"""The search app: a full-text index beside the tape and memory indexes, fed by their signals."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.backends.signals import connection_created
from django.db.models.signals import post_delete


class SearchConfig(AppConfig):
    name = "tapeview.search"
    label = "search"
    verbose_name = "Search"

    def ready(self) -> None:
        from memory_admin.models import MemoryStore
        from memory_admin.signals import store_changed
        from tapeview.tapes.models import Tape
        from tapeview.tapes.signals import (
            entries_indexed,
            indexer_idle,
            search_lag,
            source_relabelled,
            tape_reset,
        )

        from . import catchup, feed

        # The index and the memory app tell what changed; search keeps its docs in step.
        entries_indexed.connect(feed.entries_indexed, dispatch_uid="search.entries_indexed")
        tape_reset.connect(feed.tape_reset, dispatch_uid="search.tape_reset")
        source_relabelled.connect(feed.source_relabelled, dispatch_uid="search.source_relabelled")
        # Behind the offset index, the search pass: run when the indexer is idle, its lag told when asked.
        indexer_idle.connect(feed.indexer_idle, dispatch_uid="search.indexer_idle")
        search_lag.connect(catchup.lag_asked, dispatch_uid="search.search_lag")
        store_changed.connect(feed.store_changed, dispatch_uid="search.store_changed")
        # A deleted tape or store takes its docs along; the FTS table has no foreign keys.
        post_delete.connect(feed.tape_deleted, sender=Tape, dispatch_uid="search.tape_deleted")
        post_delete.connect(feed.store_deleted, sender=MemoryStore, dispatch_uid="search.store_deleted")
        connection_created.connect(_no_jit, dispatch_uid="search.no_jit")


def _no_jit(sender: object, connection, **kwargs: object) -> None:
    """PostgreSQL compiles a query whose plan looks costly (a filtered walk of the docs, newest first,
    stopped after a few thousand matches) before running it: 25 ms or more, longer than the walk."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET jit = off")
