"""The adapters of nanobot's workspace memory: its Markdown files, and its history journal."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, timedelta
from pathlib import Path

from django import forms
from django.core.cache import cache

from ..forms import HistoryForm
from ..history import Source, Step, by_operator, write_audits
from ..models import MemoryStore, Revision
from ..stores import nanobot_git, nanobot_history, nanobot_memory
from ..stores.model import MAX_TEXT, Snapshot, StoreError, version_of
from ..stores.nanobot_git import Version
from .base import StoreKind, VersionChoice, VersionList, after

GIT = "git:"  # a version that is a commit of nanobot's git store, not a revision Tapeview kept
COMMITS_SHOWN = 50
COMMITS_BLAMED = 500  # the commits blame and "as of" walk back through (Dream commits a few a day)
TAPEVIEW = nanobot_git.IDENTITY.decode()
SAME_WRITE = timedelta(seconds=2)  # a file written and committed at once, in git's whole seconds
KEPT_SECONDS = 7 * 24 * 3600  # what a commit holds, kept: a commit never changes
SHOWN = 256 * 1024  # the characters of a text its page shows, as a tape's page shows a bounded part


class NanobotText(StoreKind):
    """nanobot's MEMORY.md, bootstrap files and skills: Markdown edited whole, with git history."""

    names = (nanobot_memory.MEMORY_KIND, nanobot_memory.FILE_KIND)
    partial = "memory_admin/_text.html"
    edits_text = True
    long_term = True

    def read(self, store: MemoryStore) -> Snapshot:
        return nanobot_memory.read(store.ref())

    def versions(self, store: MemoryStore) -> list[VersionChoice]:
        return self._merged(store, COMMITS_SHOWN).choices

    def choices_near(self, store: MemoryStore, wanted: tuple[str | None, ...]) -> list[VersionChoice]:
        """The revisions and the newest COMMITS_SHOWN commits, as the store page lists them."""
        return self.versions(store)

    def version_list(self, store: MemoryStore, before: int | None = None) -> VersionList:
        """The revisions Tapeview kept and the newest COMMITS_SHOWN commits, newest first by time,
        each commit with the version of the text it holds (its page offers no restore of the text
        the file holds already)."""
        listed = self._merged(store, COMMITS_SHOWN)
        held = _holds(store, [self.commit_of(c.version) or "" for c in listed.choices])
        choices = [replace(c, holds=held.get(self.commit_of(c.version) or "", "")) for c in listed.choices]
        return replace(listed, choices=choices)

    def previous(self, store: MemoryStore, version: str) -> str | None:
        """The newest older version whose text differs: a revision Tapeview kept of a text a commit
        holds (its own edit, committed; the file seen after Dream's commit) is that commit's change.
        Where every older one holds the same text, the one just before (a diff with no difference)."""
        listed = self._merged(store, COMMITS_SHOWN)
        choices = listed.choices
        if listed.more and after(choices, version) is None:  # at or past the cut: every commit
            choices = self._merged(store, None).choices
        names = [c.version for c in choices]
        older = names[names.index(version) + 1 :] if version in names else []
        text = self.version_text(store, version)
        differs = next((v for v in older if self.version_text(store, v) != text), None)
        return differs or (older[0] if older else None)

    def _merged(self, store: MemoryStore, limit: int | None) -> VersionList:
        # One commit past the limit tells whether the list is cut.
        commits = nanobot_memory.versions(store.ref(), limit=None if limit is None else limit + 1)
        more = limit is not None and len(commits) > limit
        git = [_commit_choice(c) for c in commits[:limit]]
        kept = super().versions(store)
        if more:
            # Revisions older than the oldest listed commit sit among commits that are not listed.
            kept = [v for v in kept if v.date is None or v.date >= git[-1].date]
        return VersionList(sorted(kept + git, key=_newest_first), more)

    def version_text(self, store: MemoryStore, version: str) -> str:
        if not version.startswith(GIT):
            return super().version_text(store, version)
        try:
            text = nanobot_memory.text_at(store.ref(), version.removeprefix(GIT))
        except StoreError as exc:
            raise LookupError(str(exc)) from None
        return text or ""

    def commit_of(self, version: str) -> str | None:
        return version.removeprefix(GIT) if version.startswith(GIT) else None

    def written_text(self, store: MemoryStore, text: str, current: str) -> str:
        return nanobot_memory.encode(text, current.encode("utf-8")).decode("utf-8")

    def history(self, store: MemoryStore) -> list[Step]:
        """The revisions Tapeview kept and the commits of nanobot's git store, by time.

        Dream's commits (and any other but Tapeview's) count as the agent's; a commit Tapeview made
        is its user's, through the audit row of the write with the same content.
        """
        ref = store.ref()
        audits = write_audits(store)
        commits = []
        for c in reversed(nanobot_memory.versions(ref, limit=COMMITS_BLAMED)):
            text = nanobot_memory.text_at(ref, c.id) or ""
            dream = c.subject.startswith("dream:")
            step = Step(f"{GIT}{c.id}", c.time, text, source=Source(commit=c.id))
            step = replace(step, note="Dream's commit" if dream else f"commit by {c.author}")
            ours = [a for a in audits if a.after == version_of(text.encode())] if c.author == TAPEVIEW else []
            if ours:
                audit = min(ours, key=lambda a: abs((a.at - c.time).total_seconds()))
                author, source = by_operator(audit)
                step = replace(step, author=author, source=Source(commit=c.id, audit_id=source.audit_id))
                step = replace(step, note=f"{audit.action} in Tapeview")
            commits.append(step)
        # A revision of the text a commit has, within git's whole seconds of it, is that commit's
        # version: what Dream (or Tapeview) wrote and committed at once. Others are steps of their own.
        kept = [r for r in super().history(store) if not any(_same_write(r, c) for c in commits)]
        return sorted(kept + commits, key=lambda s: s.date)

    def long_term_text(self, snap: Snapshot) -> str:
        return snap.text

    def page_context(self, store: MemoryStore, snap: Snapshot, filters: forms.Form) -> dict:
        """`shown`: the head of the text the page shows (whole lines, within SHOWN characters);
        `too_long`: past what its edit page opens."""
        return {"shown": head(snap.text, SHOWN), "too_long": len(snap.text) > MAX_TEXT}

    def write_long_term(self, store: MemoryStore, text: str, base_version: str, editor: str) -> None:
        nanobot_memory.write(store.ref(), text, base_version, editor=editor)

    def restore(self, store: MemoryStore, version: str, base_version: str, editor: str) -> None:
        """Write a version back, only where its text is the file's bytes as they were."""
        if commit := self.commit_of(version):
            text = nanobot_memory.text_at(store.ref(), commit, exact=True) or ""
        elif store.revisions.filter(version=version, origin=Revision.NOT_TEXT).exists():
            why = "was not UTF-8 text; Tapeview kept it decoded, not its bytes, so it cannot write it back"
            raise StoreError(f"That version of {store.title} {why}.")
        else:
            text = self.version_text(store, version)
        self.write_long_term(store, text, base_version, editor)


@dataclass(frozen=True)
class Head:
    """The part of a long text a page shows: `text`, of `total` characters (`cut`: not all of them)."""

    text: str
    total: int

    @property
    def cut(self) -> bool:
        return len(self.text) < self.total


def head(text: str, limit: int) -> Head:
    """The text up to `limit` characters, ending at a line's end where one is within the limit."""
    if len(text) <= limit:
        return Head(text, len(text))
    end = text.rfind("\n", 0, limit) + 1
    return Head(text[: end or limit], len(text))


def _holds(store: MemoryStore, commit_ids: list[str]) -> dict[str, str]:
    """The version of the file's text at each commit, read once: a commit never changes."""
    ref = store.ref()
    where = version_of(str(ref.path).encode())
    keys = {commit_id: f"commit-holds:{where}:{commit_id}" for commit_id in commit_ids if commit_id}
    kept = cache.get_many(keys.values())
    held = {commit_id: kept[key] for commit_id, key in keys.items() if key in kept}
    read = nanobot_memory.versions_at(ref, [c for c in keys if c not in held])
    cache.set_many({keys[commit_id]: version for commit_id, version in read.items()}, KEPT_SECONDS)
    return {**held, **read}


def _commit_choice(c: Version) -> VersionChoice:
    # In UTC, as the revisions it is listed among (git keeps the committer's own offset).
    at = c.time.astimezone(UTC)
    label = f"{at:%Y-%m-%d %H:%M:%S} · git · {c.id[:8]} · {c.subject}"
    return VersionChoice(f"{GIT}{c.id}", label, at, c.subject, c.author)


def _newest_first(choice: VersionChoice) -> float:
    # A stable sort on this keeps git's own order among commits of the same (whole) second.
    return -choice.date.timestamp() if choice.date else 0.0


def _same_write(revision: Step, commit: Step) -> bool:
    if revision.text != commit.text or revision.date is None or commit.date is None:
        return False
    return abs(revision.date - commit.date) < SAME_WRITE


class NanobotHistory(StoreKind):
    """nanobot's history journal: read only, searched, with Dream's progress through it."""

    names = (nanobot_history.KIND,)
    partial = "memory_admin/_history.html"
    filters = HistoryForm

    def read(self, store: MemoryStore) -> Snapshot:
        return nanobot_memory.read(store.ref())

    def files(self, store: MemoryStore) -> list[Path]:
        memory = Path(store.path).parent  # Dream's progress: the cursors beside the journal
        return [Path(store.path), *nanobot_history.cursor_files(memory)]

    def export_content(self, snap: Snapshot) -> dict:
        fields = ("cursor", "timestamp", "session_key", "content", "readable")
        return {"history": [{f: getattr(item, f) for f in fields} for item in snap.items]}

    def page_context(self, store: MemoryStore, snap: Snapshot, filters: forms.Form) -> dict:
        ref, query = store.ref(), filters.cleaned_data.get("q") or ""
        return {
            "history": nanobot_history.history(ref, query or None),
            "progress": nanobot_history.dream_progress(ref.path.parents[1]),
            "q": query,
        }
