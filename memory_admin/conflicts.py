"""The conflict page of a stale write: what changed meanwhile and who changed it, and a way to write
again on top of the newer version by the same page's own write (conditional again)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from tapeview.accounts.audit import PENDING, WRITTEN, events_of
from tapeview.accounts.models import AuditEvent

from . import diff, versions
from .kinds import kind_of
from .models import MemoryStore
from .stores.model import StaleEdit, StoreError

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
    changes: list | diff.TooLarge | None = None  # a restore's diff, the newer version against what it writes


# A write in words, built where its page builds the write and asked for only if it is stale: some
# words name what the newer version holds (the entry it replaces, the notes a prune removes there).
Describe = Callable[[MemoryStore, StaleEdit], Change | None]


def conflict_page(
    request: HttpRequest,
    store: MemoryStore,
    mine: str | None,
    base: str,
    stale: StaleEdit,
    change: Describe | None = None,
) -> HttpResponse:
    """409, nothing written. Template `memory_admin/conflict.html`.

    `mine`: the text the user wanted to write (a text edit, a zone's long-term text), compared with
    the same part of the newer version and offered to save over it; None for any other write
    (a note, an entry, a key, a restore), which is offered to be made again on top of the newer version
    and shown as `change` says it.
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
        "theirs_diff": diff.rows(base_text, stale.current_text) if base_text is not None else None,
        "theirs": theirs,
        "mine": mine,
        "mine_diff": diff.rows(theirs, mine) if mine is not None else None,
        "change": change(store, stale) if change is not None and mine is None else None,
        "action": request.path,
        "fields": fields,
        "current_version": stale.current_version,
    }
    return render(request, "memory_admin/conflict.html", ctx, status=409)


def repeated(request: HttpRequest, store: MemoryStore, mine: str | None, base: str, stale: StaleEdit) -> bool:
    """Whether a stale text edit is the same Save posted again (a double click): this user's write from
    this very base gave the file its version, and it holds this very text. Nothing conflicts with it.
    (Pending too: the first write may not have settled its audit row when the second reads the file.)"""
    if mine is None:
        return False
    you = request.user.get_username()
    first = events_of(f"store:{store.key}").filter(actor=you, before=base, after=stale.current_version)
    if not first.filter(outcome__in=(WRITTEN, PENDING)).exists():
        return False
    adapter = kind_of(store)
    try:
        theirs = adapter.edited_text(store, stale.current_version)
    except LookupError:
        theirs = stale.current_text
    # Compared as the writer would write it over that text (a textarea's CRLF, a final newline the
    # file keeps or lacks), never looser: a text that writes otherwise is another Save, not this one.
    try:
        return adapter.written_text(store, mine, theirs) == theirs
    except (StoreError, UnicodeError):  # a text no write could give the file
        return False


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


def said(words: str, yours: str | None = None) -> Describe:
    """A write whose words do not depend on the newer version (an append, an added entry, a clear)."""
    return lambda store, stale: Change(words, yours)


def replacing(
    words: str,
    yours: str | None,
    name: str,
    wanted: Callable[[Any], bool],
    value: Callable[[Any], str],
) -> Describe:
    """A write of one entry or key, with that one as the newer version holds it (`name` in words; the
    first item `wanted` picks, shown by `value`): the agent's newer value, which a click would
    overwrite, is shown before it is."""

    def describe(store: MemoryStore, stale: StaleEdit) -> Change:
        change = Change(words, yours)
        try:
            snap = versions.snapshot(store)
        except (LookupError, StoreError):  # unreadable now, or another host's with no copy here
            return change
        found = next((value(item) for item in snap.items if wanted(item)), None)
        return replace(change, now_words=f"{name} in version {snap.version}", now=found)

    return describe


def restoring(words: str, version: str) -> Describe:
    """A restore, with what it changes in the newer version (as the question before it showed)."""
    return lambda store, stale: Change(words, changes=versions.restore_changes(store, version)[0])
