"""The conflict page of a stale write: what changed meanwhile and who changed it, and a way to write
again on top of the newer version by the same page's own write (conditional again)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from tapeview.accounts.audit import WRITTEN, events_of
from tapeview.accounts.models import AuditEvent

from . import diff, versions
from .kinds import kind_of
from .models import MemoryStore
from .stores.model import StaleEdit

# What a write again carries over from the stale POST: all but what the page sets anew.
RESENT_NOT = ("csrfmiddlewaretoken", "confirmed", "base_version")


def conflict_page(
    request: HttpRequest, store: MemoryStore, mine: str | None, base: str, stale: StaleEdit
) -> HttpResponse:
    """409, nothing written. Template `memory_admin/conflict.html`.

    `mine`: the text the user wanted to write (a text edit, a zone's long-term text), compared with
    the same part of the newer version and offered to save over it; None for any other write
    (a note, an entry, a key, a restore), which is offered to be made again on top of the newer version.
    """
    adapter = kind_of(store)
    try:
        base_text = versions.version_text(store, base)
    except LookupError:
        base_text = None
    try:
        theirs = adapter.edited_text(store, stale.current_version)
    except LookupError:
        theirs = stale.current_text
    try:
        base_part = adapter.edited_text(store, base) if base_text is not None else None
    except LookupError:
        base_part = None
    fields = [
        (k, v) for k, v in request.POST.items() if k not in RESENT_NOT and (k != "text" or mine is None)
    ]
    ctx = {
        "store": store,
        "by": changed_by(store, stale.current_version),
        "you": request.user.get_username(),
        "part": adapter.edited_part,
        "base": base,
        "base_part": base_part,
        "theirs_whole": stale.current_text,
        "theirs_diff": diff.line_diff(base_text, stale.current_text) if base_text is not None else None,
        "theirs": theirs,
        "mine": mine,
        "mine_diff": diff.line_diff(theirs, mine) if mine is not None else None,
        "action": request.path,
        "fields": fields,
        "current_version": stale.current_version,
    }
    return render(request, "memory_admin/conflict.html", ctx, status=409)


def changed_by(store: MemoryStore, version: str) -> AuditEvent | None:
    """The Tapeview write that gave the store `version`, if one did (else the agent did)."""
    written = events_of(f"store:{store.key}").filter(after=version, outcome=WRITTEN)
    return written.order_by("-at", "-id").first()
