"""A store whose source is no longer configured: the versions Tapeview kept of it, read-only, no file read."""

from __future__ import annotations

from pathlib import Path

from ..models import MemoryStore
from ..stores.model import Snapshot, StoreError
from .base import StoreKind

NOT_CONFIGURED = "source no longer configured"


class Kept(StoreKind):
    """Its versions are the revisions Tapeview kept; its file, outside every configured source, is
    neither read nor written (the sources' path policy covers only what is configured)."""

    def why(self, store: MemoryStore) -> str:
        return (
            f"{NOT_CONFIGURED}: {store.source!r} is configured no more, so only the versions Tapeview "
            "kept of this store are shown, and its file is not read"
        )

    def read(self, store: MemoryStore) -> Snapshot:
        raise StoreError(self.why(store))

    def files(self, store: MemoryStore) -> list[Path]:
        return []

    def write_long_term(self, store: MemoryStore, text: str, base_version: str, editor: str) -> None:
        raise StoreError(self.why(store))

    def restore(self, store: MemoryStore, version: str, base_version: str, editor: str) -> None:
        raise StoreError(self.why(store))

    def prune_preview(self, store: MemoryStore, days: int) -> list[str]:
        raise StoreError(self.why(store))
