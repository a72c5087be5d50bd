"""What a page says after its write: the version it saved (or that nothing changed), or why not: the
conflict of a stale write, where the same Save posted twice (a double click) is answered as the first."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from .conflicts import Describe, conflict_page, repeated
from .models import MemoryStore
from .stores.model import Snapshot, StaleEdit


def saved(request: HttpRequest, snap: Snapshot, base: str, done: str = "", again: str = "") -> None:
    """Say what a write made of the store, by the version its page now shows in the header
    (`again`: the version a restore gave back, which a file whose versions are hashes holds again)."""
    if snap.version == base:
        messages.info(request, f"Nothing changed: the store is still at version {snap.version}.")
    elif done and snap.version == again:
        messages.success(request, f"{done}: the file holds version {snap.version} again.")
    elif done:
        messages.success(request, f"{done}: saved as version {snap.version}.")
    else:
        messages.success(request, f"Saved as version {snap.version}.")


def stale_page(
    request: HttpRequest,
    store: MemoryStore,
    stale: StaleEdit,
    base: str,
    done: str = "",
    again: str = "",
    mine: str | None = None,
    change: Describe | None = None,
) -> HttpResponse:
    """The conflict page of a stale write (conflicts.conflict_page), unless it repeats the write that
    made the file's version: then back to the store, saying it is saved, as the first answer said."""
    if repeated(request, store, mine, base, stale):
        saved(request, Snapshot(stale.current_version, ""), base, done, again)
        return redirect("memory_admin:store_detail", key=store.key)
    return conflict_page(request, store, mine, base, stale, change)
