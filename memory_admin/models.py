"""Memory stores found in the sources, and every version of them we have seen."""

from __future__ import annotations

from pathlib import Path

from django.db import models

from .stores.model import StoreRef


class MemoryStore(models.Model):
    """One memory store of a source (derived: rebuilt from the files like the tape index)."""

    key = models.CharField(max_length=32, unique=True)  # opaque, URL-safe id
    host = models.CharField(max_length=255, db_index=True, default="")  # as Tape.host
    source = models.CharField(max_length=100, db_index=True)
    kind = models.CharField(max_length=40)  # bub.zone, nanobot.memory, yachiyo.memory, araliya.kv, ...
    rel = models.CharField(max_length=1000)  # the store's place within the source
    path = models.CharField(max_length=4096)
    title = models.CharField(max_length=300)
    owner = models.CharField(max_length=500)
    editable = models.BooleanField(default=True)
    note = models.CharField(max_length=300, blank=True)
    # SET_NULL: a zone's kept versions outlive its tape's row (a source no longer configured keeps them).
    tape = models.ForeignKey("tapeview.Tape", null=True, blank=True, on_delete=models.SET_NULL)
    size = models.BigIntegerField(default=0)
    changed_at = models.DateTimeField(null=True)  # the file's mtime
    version = models.CharField(max_length=64, blank=True)  # of the content last seen
    # False: its source is no longer configured on its host; kept with its versions, its file never read.
    configured = models.BooleanField(default=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["host", "source", "kind", "rel"], name="store_host_source_kind_rel"
            )
        ]

    def __str__(self) -> str:
        return f"{self.title} ({self.owner})"

    def ref(self) -> StoreRef:
        """The store as the plain-Python store modules take it."""
        return StoreRef(
            self.rel, self.kind, self.title, self.owner, Path(self.path), self.editable, self.note
        )


class Revision(models.Model):
    """A version of a store's content that Tapeview has seen or written: history survives rewrites."""

    store = models.ForeignKey(MemoryStore, on_delete=models.CASCADE, related_name="revisions")
    version = models.CharField(max_length=64)
    text = models.TextField()
    seen_at = models.DateTimeField(auto_now_add=True)
    origin = models.CharField(max_length=20, default="seen")  # seen | written | restored | NOT_TEXT

    # Seen on disk in a file that is not UTF-8 text: `text` is it decoded (U+FFFD for the bytes that
    # are not UTF-8), not its bytes, so it is never written back as if it were the file.
    NOT_TEXT = "seen, not text"
    SUMMARIES = {
        "seen": "seen on disk",
        "written": "written through Tapeview",
        NOT_TEXT: "seen on disk, not UTF-8 text: kept as shown (U+FFFD for the bytes that are not UTF-8), "
        "not byte for byte, so it cannot be restored",
    }

    class Meta:
        ordering = ["-seen_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["store", "version"], name="revision_store_version")]

    @property
    def summary(self) -> str:
        """What the store page and the versions API say of how this version came to be."""
        return self.SUMMARIES.get(self.origin, self.origin)
