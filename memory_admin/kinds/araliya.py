"""The adapter of an araliya session's kv.json."""

from __future__ import annotations

from collections.abc import Callable

from ..models import MemoryStore
from ..stores import araliya_kv
from ..stores.model import Snapshot
from .base import StoreKind


class AraliyaKv(StoreKind):
    """An araliya session's kv.json: values set and deleted with the agent's cap and eviction."""

    names = (araliya_kv.KIND,)
    partial = "memory_admin/_kv.html"

    def read(self, store: MemoryStore) -> Snapshot:
        return araliya_kv.read(store.ref())

    def apply(self, store: MemoryStore, action: str, base_version: str, **params) -> None:
        ref = store.ref()
        operations: dict[str, Callable[[], object]] = {
            "set": lambda: araliya_kv.set_value(ref, params["key"], params["value"], base_version),
            "delete": lambda: araliya_kv.delete_value(ref, params["key"], base_version),
        }
        operations[action]()
