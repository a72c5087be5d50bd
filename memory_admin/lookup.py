"""Finding what a URL names: a memory store by its key, or a tape's memory zone."""

from __future__ import annotations

from collections.abc import Collection

from django.conf import settings
from django.http import Http404

from tapeview.tapes import copy_reader, lookup

from .catalog import refusal, sync_stores
from .kinds import BubZone
from .models import MemoryStore


def find_store(key: str, kinds: Collection[str] | None = None) -> MemoryStore:
    """The store with this key (and of one of `kinds`), its files read from its host: else a 404
    in the user's words, for the API and the pages alike."""
    stores = MemoryStore.objects.select_related("tape").filter(key=key)
    if kinds is not None:
        stores = stores.filter(kind__in=kinds)
    store = stores.first() if lookup.is_key(key) else None
    if store is None:
        raise Http404("no such memory store")
    if why := refusal(store):
        raise Http404(f"this store's file is {why}")
    copy_reader.read_from_host(store.host)  # another host's store: its files' copies
    return store


def find_zone(tape_key: str) -> MemoryStore:
    """The memory zone of the tape with this key, its index brought up to date."""
    tape = lookup.find_tape(tape_key)
    if settings.TAPEVIEW_WEB_INDEXES:  # else another process keeps the index (serve --no-index)
        sync_stores()
    store = MemoryStore.objects.filter(kind__in=BubZone.names, tape=tape).first()
    if store is None:
        raise Http404("this tape has no memory zone")
    return store
