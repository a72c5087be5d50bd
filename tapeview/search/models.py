"""What the search index remembers besides its docs table (which is raw SQL: FTS5 or tsvector)."""

from __future__ import annotations

from django.db import models


class IndexedStore(models.Model):
    """A memory store's file as it was when its docs were last brought up to date."""

    store = models.OneToOneField(
        "memory_admin.MemoryStore", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    size = models.BigIntegerField(default=0)
    changed_at = models.DateTimeField(null=True)
