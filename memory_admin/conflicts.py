"""The conflict page of a stale write: what changed meanwhile and who changed it, and a way to write
again on top of the newer version by the same page's own write (conditional again)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from tapeview.accounts.audit import WRITTEN, events_of
from tapeview.accounts.models import AuditEvent

from . import diff, versions
from .forms import PRUNE_DAYS
from .kinds import kind_of
from .models import MemoryStore
from .stores.model import StaleEdit, StoreError
from .stores.yachiyo_memory import MemoryEntry

# What a write again carries over from the stale POST: all but what the page sets anew.
RESENT_NOT = ("csrfmiddlewaretoken", "confirmed", "base_version")
# What a write through Tapeview did, as the conflict page names it (by its audit action and detail).
DONE = {
    "edit": "edited the text",
    "restore": "restored version {version}",
    "zone.long_term": "saved the long-term memory",
    "zone.daily": "appended to today's note",
    "zone.prune": "pruned the daily notes older than {days} days",
    "zone.clear": "cleared the memory",
    "zone.restore": "restored version {version}",
    "zone.move": "moved the memory zone to its sidecar",
    "entry.add": "added an entry",
    "entry.edit": "edited the entry {entry_id}",
    "entry.delete": "deleted the entry {entry_id}",
    "kv.set": "set the key '{key}'",
    "kv.delete": "deleted the key '{key}'",
}


@dataclass(frozen=True)
class Change:
    """A write the page makes again on top of the newer version (not a text edit), in words."""

    words: str  # "append to today's note", "set the key 'mood' to"
    yours: str | None = None  # what it writes: the note, the entry, the key's value
    now_words: str = ""  # where the write replaces one entry or key: that one on the newer version
    now: str | None = None  # its value there (None: not there)
    changes: list | None = None  # a restore's diff, the newer version against what it writes


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
        "by": (by := changed_by(store, stale.current_version)),
        "by_words": done_words(by) if by else "",
        "you": request.user.get_username(),
        "part": adapter.edited_part,
        "base": base,
        "base_part": base_part,
        "theirs_whole": stale.current_text,
        "theirs_diff": diff.line_diff(base_text, stale.current_text) if base_text is not None else None,
        "theirs": theirs,
        "mine": mine,
        "mine_diff": diff.line_diff(theirs, mine) if mine is not None else None,
        "change": your_change(request, store, stale) if mine is None else None,
        "action": request.path,
        "fields": fields,
        "current_version": stale.current_version,
    }
    return render(request, "memory_admin/conflict.html", ctx, status=409)


def changed_by(store: MemoryStore, version: str) -> AuditEvent | None:
    """The Tapeview write that gave the store `version`, if one did (else the agent did)."""
    written = events_of(f"store:{store.key}").filter(after=version, outcome=WRITTEN)
    return written.order_by("-at", "-id").first()


def done_words(event: AuditEvent) -> str:
    """What a write through Tapeview did, in words with its values, not its audit name."""
    words = DONE.get(event.action, "a change")
    try:
        return words.format_map(event.detail if isinstance(event.detail, dict) else {})
    except (KeyError, ValueError, IndexError):  # an older row that kept fewer details
        return words.split(" {")[0].split(" '{")[0]


def your_change(request: HttpRequest, store: MemoryStore, stale: StaleEdit) -> Change | None:
    """The stale POST in words, by the page that sent it (whose form validated it already)."""
    page = request.resolver_match.url_name if request.resolver_match else ""
    sent, action = request.POST, request.POST.get("action", "")
    if page == "store_restore" or (page == "zone_action" and action == "restore"):
        version = sent.get("version", "")
        try:
            changes = diff.line_diff(stale.current_text, versions.version_text(store, version))
        except (LookupError, StoreError):
            changes = None
        return Change(f"restore version {version[:16]}", changes=changes)
    if page == "zone_action":
        return _zone_change(store, action, sent.get("text", ""), sent.get("days", ""), stale)
    if page == "entry_action":
        keywords = [k.strip() for k in sent.get("keywords", "").replace("，", ",").split(",") if k.strip()]
        yours, entry_id = _entry(sent.get("content", ""), keywords), sent.get("entry_id", "")
        if action == "add":
            return Change("add an entry", yours)
        words = f"change the entry {entry_id} to" if action == "edit" else f"delete the entry {entry_id}"
        change = Change(words, yours if action == "edit" else None)
        return _beside(store, change, f"The entry {entry_id}", lambda e: e.id == entry_id, _entry_of)
    if page == "kv_action":
        key = sent.get("key", "")
        words = f"set the key '{key}' to" if action == "set" else f"delete the key '{key}'"
        change = Change(words, sent.get("value", "") if action == "set" else None)
        return _beside(store, change, f"The key '{key}'", lambda p: p.key == key, lambda p: p.value)
    return None


def _zone_change(store: MemoryStore, action: str, text: str, days: str, stale: StaleEdit) -> Change | None:
    if action == "daily":
        return Change("append to today's note", text)
    if action == "clear":
        return Change("clear all memory, the long-term text and every daily note")
    if action == "move":
        return Change("move the memory zone to its sidecar")
    if action != "prune":
        return None
    older = int(days) if days.isascii() and days.isdigit() else PRUNE_DAYS
    words = f"remove the daily notes older than {older} days"
    try:
        gone = ", ".join(kind_of(store).prune_preview(store, older)) or "none is that old"
    except (LookupError, StoreError):
        return Change(words)
    return Change(f"{words} (in version {stale.current_version}: {gone})")


def _beside(
    store: MemoryStore,
    change: Change,
    name: str,
    wanted: Callable[[Any], bool],
    value: Callable[[Any], str],
) -> Change:
    """`change` with the entry or key it replaces as the newer version holds it: the agent's newer
    value, which a click would overwrite, is shown before it is."""
    try:
        snap = versions.snapshot(store)
    except (LookupError, StoreError):  # unreadable now, or another host's with no copy here
        return change
    found = next((value(item) for item in snap.items if wanted(item)), None)
    return replace(change, now_words=f"{name} in version {snap.version}", now=found)


def _entry_of(entry: MemoryEntry) -> str:
    return _entry(entry.content, entry.keywords)


def _entry(content: str, keywords: Iterable[str]) -> str:
    keywords = list(keywords)
    return f"{content} (keywords: {', '.join(keywords)})" if keywords else content
