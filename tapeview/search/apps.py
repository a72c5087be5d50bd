"""The search app: a full-text index beside the tape index, kept in step with it."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_delete


class SearchConfig(AppConfig):
    name = "tapeview.search"
    label = "search"
    verbose_name = "Search"

    def ready(self) -> None:
        from memory_admin.models import MemoryStore
        from tapeview.models import Tape

        from . import engine

        # A deleted tape or store takes its docs along; the FTS table has no foreign keys.
        post_delete.connect(engine.tape_deleted, sender=Tape, dispatch_uid="search.tape_deleted")
        post_delete.connect(engine.store_deleted, sender=MemoryStore, dispatch_uid="search.store_deleted")
