"""Writes to structured memory: a Bub zone, yachiyo entries, araliya kv. Each POST, operators only."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_POST

from tapeview.accounts.roles import role_required

from . import versions
from .conflicts import Change, Describe, replacing, restoring, said
from .forms import PRUNE_DAYS, EntryForm, KvForm, ZoneForm
from .kinds import AraliyaKv, BubZone, YachiyoMemory, kind_of
from .lookup import find_store
from .models import MemoryStore
from .stores.model import StaleEdit, StoreError
from .stores.yachiyo_memory import MemoryEntry
from .views import confirm_page, refused, write_page

# What each zone action did, as the message after it says (a prune names how many notes went).
ZONE_DONE = {
    "long_term": "Saved the long-term memory",
    "daily": "Added to today's note",
    "clear": "Cleared the memory",
    "move": "Moved the memory zone to its sidecar",
}
# The zone actions that take something away ask first (confirm_page); the others write at once.
ZONE_QUESTIONS = {
    "clear": "Clear all memory? A new, empty version is written; the older versions stay in the tape.",
    "restore": "Restore version {version}? It is written as a new version; nothing is lost.",
    "prune": "Prune {notes} older than {days} days ({dates})? A new version is written without them; "
    "the older versions stay in the tape.",
}
# Each zone action in words, as a conflict says "Your change: …" (a prune and a restore: below).
ZONE_CHANGES = {
    "daily": "append to today's note",
    "clear": "clear all memory, the long-term text and every daily note",
}


@require_POST
@role_required("operator")
def zone_action(request: HttpRequest, key: str) -> HttpResponse:
    store = find_store(key, BubZone.names)
    form = ZoneForm(request.POST)
    if not form.is_valid():  # a text refused in the edit page's words, else which field is wrong
        return refused(
            request, store, StoreError(" ".join(form.errors.get("text", [])) or form.errors.as_text())
        )
    data = form.cleaned_data
    action, base = data["action"], data["base_version"]
    if action == "move":
        change = said("move the memory zone to its sidecar")
        return write_page(request, store, "zone_move", base, ZONE_DONE["move"], change=change)
    days = data["days"] if data["days"] is not None else PRUNE_DAYS
    params = {"long_term": {"text": data["text"]}, "daily": {"text": data["text"]}, "prune": {"days": days},
              "restore": {"version": data["version"]}, "clear": {}}[action]  # fmt: skip
    if action == "restore" and data["version"] is None:
        return refused(request, store, StoreError("say which version to restore"))
    done, question = ZONE_DONE.get(action, ""), ZONE_QUESTIONS.get(action, "")
    if action == "restore":
        done = f"Restored version {data['version']}"
        question = question.format(version=data["version"])
    elif action == "prune":
        gone = kind_of(store).prune_preview(store, days)
        if not gone:
            messages.info(request, f"No daily note is older than {days} days: nothing was written.")
            return redirect("memory_admin:store_detail", key=store.key)
        notes = f"{len(gone)} daily note{pluralize(len(gone))}"
        done, question = f"Pruned {notes}", question.format(notes=notes, days=days, dates=", ".join(gone))
    if question and not data["confirmed"]:
        changes = versions.restore_changes(store, str(data["version"])) if action == "restore" else (None, "")
        return confirm_page(request, store, question, *changes)
    mine = data["text"] if action == "long_term" else None  # the text a conflict offers to save again
    change = {
        "daily": said(ZONE_CHANGES["daily"], data["text"]),
        "clear": said(ZONE_CHANGES["clear"]),
        "prune": _pruning(days),
        "restore": restoring(f"restore version {data['version']}", str(data["version"])),
    }.get(action)
    return write_page(request, store, "zone_write", base, done, mine, change, action=action, **params)


def _pruning(days: int) -> Describe:
    """A prune in words, with the notes it removes from the newer version."""
    words = f"remove the daily notes older than {days} days"

    def describe(store: MemoryStore, stale: StaleEdit) -> Change:
        try:
            gone = ", ".join(kind_of(store).prune_preview(store, days)) or "none is that old"
        except (LookupError, StoreError):
            return Change(words)
        return Change(f"{words} (in version {stale.current_version}: {gone})")

    return describe


@require_POST
@role_required("operator")
def entry_action(request: HttpRequest, key: str) -> HttpResponse:
    store = find_store(key, YachiyoMemory.names)
    form = EntryForm(request.POST)
    if not form.is_valid():
        return refused(request, store, StoreError(form.errors.as_text()))
    data = form.cleaned_data
    action, entry_id = data["action"], data["entry_id"]
    keywords = [k for k in data["keywords"].replace("，", ",").split(",") if k.strip()]
    params = {"entry_id": entry_id, "content": data["content"], "keywords": keywords}
    yours = _entry(data["content"], (k.strip() for k in keywords))
    if action == "add":
        change = said("add an entry", yours)
    else:
        words = f"change the entry {entry_id} to" if action == "edit" else f"delete the entry {entry_id}"
        yours = yours if action == "edit" else None
        change = replacing(words, yours, f"The entry {entry_id}", lambda entry: entry.id == entry_id, _shown)
    if action == "delete":
        params = {"entry_id": entry_id}
        if not data["confirmed"]:
            return confirm_page(request, store, f"Delete the memory entry {entry_id}?")
    done = {"add": "Added an entry", "edit": "Edited an entry", "delete": "Deleted an entry"}[action]
    return write_page(
        request, store, "entry_write", data["base_version"], done, change=change, action=action, **params
    )


def _shown(entry: MemoryEntry) -> str:
    return _entry(entry.content, entry.keywords)


def _entry(content: str, keywords: Iterable[str]) -> str:
    keywords = list(keywords)
    return f"{content} (keywords: {', '.join(keywords)})" if keywords else content


@require_POST
@role_required("operator")
def kv_action(request: HttpRequest, key: str) -> HttpResponse:
    store = find_store(key, AraliyaKv.names)
    form = KvForm(request.POST)
    if not form.is_valid():
        return refused(request, store, StoreError(form.errors.as_text()))
    data = form.cleaned_data
    action, name = data["action"], data["key"]
    params = {"key": name, "value": data["value"]} if action == "set" else {"key": name}
    if action == "delete" and not data["confirmed"]:
        return confirm_page(request, store, f"Delete the key {name!r}?")
    words = f"set the key '{name}' to" if action == "set" else f"delete the key '{name}'"
    yours = data["value"] if action == "set" else None
    change = replacing(
        words, yours, f"The key '{name}'", lambda pair: pair.key == name, lambda pair: pair.value
    )
    done = f"{'Set' if action == 'set' else 'Deleted'} the key {name!r}"
    return write_page(
        request, store, "kv_write", data["base_version"], done, change=change, action=action, **params
    )
