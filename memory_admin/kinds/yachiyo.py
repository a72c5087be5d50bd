"""The adapter of yachiyo's memory.json."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from ..models import MemoryStore
from ..stores import yachiyo_memory
from ..stores.model import Snapshot
from .base import StoreKind


class YachiyoMemory(StoreKind):
    """yachiyo's memory.json: entries added, edited and deleted by the gateway's own rules."""

    names = (yachiyo_memory.KIND,)
    partial = "memory_admin/_yachiyo.html"

    def read(self, store: MemoryStore) -> Snapshot:
        return yachiyo_memory.read(store.ref())

    def apply(self, store: MemoryStore, action: str, base_version: str, **params) -> None:
        ref, now = store.ref(), datetime.now(UTC)
        operations: dict[str, Callable[[], object]] = {
            "add": lambda: yachiyo_memory.add_entry(
                ref, params["content"], params["keywords"], base_version, now=now
            ),
            "edit": lambda: yachiyo_memory.edit_entry(
                ref, params["entry_id"], params["content"], params["keywords"], base_version, now=now
            ),
            "delete": lambda: yachiyo_memory.delete_entry(ref, params["entry_id"], base_version, now=now),
        }
        operations[action]()
