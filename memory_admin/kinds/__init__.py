"""One adapter per kind of memory store (read, versioned, written back, shown) and their registry."""

from __future__ import annotations

from typing import TypeVar

from ..models import MemoryStore
from ..stores.model import StoreError
from .araliya import AraliyaKv
from .base import StoreKind, VersionChoice, VersionList
from .bub import BubZone
from .kept import NOT_CONFIGURED, Kept
from .nanobot import NanobotHistory, NanobotText
from .yachiyo import YachiyoMemory

# MemoryStore.kind -> its adapter; each adapter names its kinds (`names`, the store modules' KIND).
KINDS: dict[str, StoreKind] = {
    name: adapter
    for adapter in (BubZone(), NanobotText(), NanobotHistory(), YachiyoMemory(), AraliyaKv())
    for name in adapter.names
}
K = TypeVar("K", bound=StoreKind)
KEPT = Kept()


def kind_of(store: MemoryStore) -> StoreKind:
    """The adapter of a store's kind (of a source no longer configured: KEPT's, whatever its kind);
    StoreError for a kind this version of Tapeview does not know."""
    if not store.configured:
        return KEPT
    try:
        return KINDS[store.kind]
    except KeyError:
        raise StoreError(f"Tapeview does not know {store.kind!r} stores") from None


def require(store: MemoryStore, kind: type[K]) -> K:
    """The store's adapter if it is of `kind`: an edit meant for another kind is refused, never tried."""
    adapter = kind_of(store)
    if adapter is KEPT:
        raise StoreError(KEPT.why(store))
    if not isinstance(adapter, kind):
        raise StoreError(f"{store.title} is a {store.kind} store: this edit does not apply to it")
    return adapter


__all__ = [
    "KINDS",
    "AraliyaKv",
    "BubZone",
    "KEPT",
    "NOT_CONFIGURED",
    "Kept",
    "NanobotHistory",
    "NanobotText",
    "StoreKind",
    "VersionChoice",
    "VersionList",
    "YachiyoMemory",
    "kind_of",
    "require",
]
