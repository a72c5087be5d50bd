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


class SearchedTape(models.Model):
    """How far a tape's entries are searchable: the search pass goes on from here, behind the offset index.

    Written in the transaction that inserts the docs up to it, so a killed pass resumes where it
    stopped; forgotten with the tape's docs when the tape is reset.
    """

    tape = models.OneToOneField("tapeview.Tape", on_delete=models.CASCADE, primary_key=True, related_name="+")
    offset = models.BigIntegerField(default=0)  # the byte after the last entry made searchable
    next_pos = models.IntegerField(default=1)  # the position of the next entry to make searchable
