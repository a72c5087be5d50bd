"""The adapters of nanobot's workspace memory: its Markdown files, and its history journal."""

from __future__ import annotations

from django import forms

from ..forms import HistoryForm
from ..models import MemoryStore
from ..stores import nanobot_history, nanobot_memory
from ..stores.model import Snapshot, StoreError
from .base import StoreKind, VersionChoice

GIT = "git:"  # a version that is a commit of nanobot's git store, not a revision Tapeview kept
COMMITS_SHOWN = 50


class NanobotText(StoreKind):
    """nanobot's MEMORY.md, bootstrap files and skills: Markdown edited whole, with git history."""

    names = (nanobot_memory.MEMORY_KIND, nanobot_memory.FILE_KIND)
    partial = "memory_admin/_text.html"
    edits_text = True
    long_term = True

    def read(self, store: MemoryStore) -> Snapshot:
        return nanobot_memory.read(store.ref())

    def versions(self, store: MemoryStore) -> list[VersionChoice]:
        commits = nanobot_memory.versions(store.ref(), limit=COMMITS_SHOWN)
        git = [VersionChoice(f"{GIT}{c.id}", f"git {c.id[:8]} · {c.subject}") for c in commits]
        return super().versions(store) + git

    def version_text(self, store: MemoryStore, version: str) -> str:
        if not version.startswith(GIT):
            return super().version_text(store, version)
        try:
            text = nanobot_memory.text_at(store.ref(), version.removeprefix(GIT))
        except StoreError as exc:
            raise LookupError(str(exc)) from None
        return text or ""

    def long_term_text(self, snap: Snapshot) -> str:
        return snap.text

    def page_context(self, store: MemoryStore, snap: Snapshot, filters: forms.Form) -> dict:
        return {"commits": nanobot_memory.versions(store.ref(), limit=COMMITS_SHOWN)}

    def write_long_term(self, store: MemoryStore, text: str, base_version: str, editor: str) -> None:
        nanobot_memory.write(store.ref(), text, base_version, editor=editor)

    def restore(self, store: MemoryStore, version: str, base_version: str, editor: str) -> None:
        self.write_long_term(store, self.version_text(store, version), base_version, editor)


class NanobotHistory(StoreKind):
    """nanobot's history journal: read only, searched, with Dream's progress through it."""

    names = (nanobot_history.KIND,)
    partial = "memory_admin/_history.html"
    filters = HistoryForm

    def read(self, store: MemoryStore) -> Snapshot:
        return nanobot_memory.read(store.ref())

    def page_context(self, store: MemoryStore, snap: Snapshot, filters: forms.Form) -> dict:
        ref, query = store.ref(), filters.cleaned_data.get("q") or ""
        return {
            "history": nanobot_history.history(ref, query or None),
            "progress": nanobot_history.dream_progress(ref.path.parents[1]),
            "q": query,
        }
