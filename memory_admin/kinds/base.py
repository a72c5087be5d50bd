"""The adapter every kind of memory store has: its defaults are those of a store Tapeview only reads."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

from django import forms
from django.db.models import Q, QuerySet

from ..forms import EmptyForm
from ..history import LineOrigin, Step, held_at, revision_steps
from ..models import MemoryStore, Revision
from ..stores.model import Snapshot, StoreError


@dataclass(frozen=True)
class VersionChoice:
    """A version a store can be compared at or restored to, as the user sees it."""

    version: str
    label: str
    date: datetime | None = None  # when it was written or first seen (None where nothing says)
    summary: str = ""  # what changed, as the store page says it
    by: str = ""  # who made it, where the store records that apart from Tapeview (a git commit's author)
    holds: str = ""  # the version of the text it holds, where that is not `version` (a commit's); "" unknown
    exact: bool = True  # its text is the file's bytes (False: a file that was not UTF-8 text, decoded)


@dataclass(frozen=True)
class VersionList:
    """The versions a page lists, newest first; `more`: older ones exist that are not listed. Where
    the list is paged, `older` and `newer` are the `?before=` of the pages on either side ("" the
    newest page, None none)."""

    choices: list[VersionChoice]
    more: bool = False
    older: int | None = None
    newer: int | str | None = None

    @property
    def first(self) -> str | None:
        """The version nothing comes before, if it is listed."""
        return self.choices[-1].version if self.choices and not self.more else None

    @property
    def commits(self) -> bool:
        """Some are git commits (only a commit names its author)."""
        return any(c.by for c in self.choices)


def after(choices: list[VersionChoice], version: str) -> str | None:
    """The version listed after `version` (the one before it in time); None if none is listed."""
    names = [c.version for c in choices]
    at = names.index(version) if version in names else len(names)
    return names[at + 1] if at + 1 < len(names) else None


PAGE = 50  # versions a page lists, newest first (an "older" link pages back)


class StoreKind:
    """The defaults: a store Tapeview only reads, whose versions are the revisions it has seen."""

    names: ClassVar[tuple[str, ...]] = ()  # the MemoryStore.kind values this adapter serves
    partial: ClassVar[str] = ""  # the template of the store page's part that shows the content
    filters: ClassVar[type[forms.Form]] = EmptyForm  # validates that part's query string
    edits_text: ClassVar[bool] = False  # the whole file is edited as text (the edit page)
    long_term: ClassVar[bool] = False  # PUT .../long-term replaces its long-term text
    prune: ClassVar[bool] = False  # its old notes can be pruned (POST .../prune)
    lists_revisions: ClassVar[bool] = True  # the page lists Tapeview's revisions (a zone lists its own)
    long_term_action: ClassVar[str] = "edit"  # the audit log's names for a long-term edit and a restore
    restore_action: ClassVar[str] = "restore"
    edited_part: ClassVar[str] = ""  # what a text edit replaces where it is part of the store, in words
    blame_note: ClassVar[str] = ""  # what the blame page says of who wrote the lines, where it is unknown

    def read(self, store: MemoryStore) -> Snapshot:
        raise NotImplementedError

    def files(self, store: MemoryStore) -> list[Path]:
        """The files its page reads: what a fleet's watcher copies for a web tier elsewhere."""
        return [Path(store.path)]

    def versions(self, store: MemoryStore) -> list[VersionChoice]:
        """Every version the store can be compared at or restored to, newest first."""
        return [_revision_choice(r) for r in _listed(store)]

    def version_list(self, store: MemoryStore, before: int | None = None) -> VersionList:
        """The PAGE versions its pages list, newest first, older than the revision `before` (its id;
        None: the newest), by keyset: what a page reads does not grow with the versions kept."""
        revisions = _listed(store)
        edge = store.revisions.filter(pk=before).values_list("seen_at", flat=True).first() if before else None
        if edge is not None:
            revisions = revisions.filter(Q(seen_at__lt=edge) | Q(seen_at=edge, pk__lt=before))
        found = list(revisions[: PAGE + 1])
        more = len(found) > PAGE
        newer: int | str | None = None
        if edge is not None and found:
            top = found[0]
            above = store.revisions.filter(Q(seen_at__gt=top.seen_at) | Q(seen_at=top.seen_at, pk__gt=top.pk))
            ids = list(above.order_by("seen_at", "id").values_list("pk", flat=True)[: PAGE + 1])
            newer = (ids[PAGE] if len(ids) > PAGE else "") if ids else None
        choices = [_revision_choice(r) for r in found[:PAGE]]
        return VersionList(choices, more, found[PAGE - 1].pk if more else None, newer)

    def choices_near(self, store: MemoryStore, wanted: tuple[str | None, ...]) -> list[VersionChoice]:
        """What a diff page's pickers offer, newest first: the newest PAGE versions and `wanted` (its
        two versions) among them."""
        listed = {r.pk: r for r in _listed(store)[:PAGE]}
        listed.update((r.pk, r) for r in _listed(store).filter(version__in=[v for v in wanted if v]))
        ordered = sorted(listed.values(), key=lambda r: (r.seen_at, r.pk), reverse=True)
        return [_revision_choice(r) for r in ordered]

    def count(self, store: MemoryStore) -> tuple[int, datetime | None]:
        """How many versions, and the newest one's date."""
        newest = _listed(store).first()
        return store.revisions.count(), newest.seen_at if newest else None

    def previous(self, store: MemoryStore, version: str) -> str | None:
        """The version before `version` in time: what a diff of it compares with (None: it is the first)."""
        rev = _listed(store).filter(version=version).first()
        if rev is None:
            return None
        older = _listed(store).filter(Q(seen_at__lt=rev.seen_at) | Q(seen_at=rev.seen_at, pk__lt=rev.pk))
        return older.values_list("version", flat=True).first()

    def version_text(self, store: MemoryStore, version: str) -> str:
        """The text of a version (LookupError if there is no such version)."""
        rev = store.revisions.filter(version=version).first()
        if rev is None:
            raise LookupError(f"no version {version!r} of {store.title}")
        return rev.text

    def commit_of(self, version: str) -> str | None:
        """The commit of the store's own git history that `version` names; None for any other version."""
        return None

    def edited_text(self, store: MemoryStore, version: str) -> str:
        """What a text edit replaces, in `version` (LookupError if none): a conflict compares it with
        the editor's text."""
        return self.version_text(store, version)

    def written_text(self, store: MemoryStore, text: str, current: str) -> str:
        """`text` as a text edit writes it over `current`: as it is, where the store keeps a text as sent."""
        return text

    def history(self, store: MemoryStore) -> list[Step]:
        """Every version as it appeared, oldest first (blame and "as of" read these)."""
        return revision_steps(store)

    def history_back(self, store: MemoryStore) -> Iterator[Step]:
        """history() newest first; a kind with many versions reads them only as far as asked."""
        return reversed(self.history(store))

    def step_at(
        self, store: MemoryStore, tape_key: str | None, pos: int | None, when: datetime | None, label: str
    ) -> Step:
        """The step that held at a point of the past (history.held_at)."""
        steps = self.history(store)
        return steps[held_at(steps, tape_key, pos, when, label)]

    def line_origins(self, store: MemoryStore, snap: Snapshot) -> list[LineOrigin | None]:
        """Per line of `snap.text`, what the store itself records of it; [] where it records nothing."""
        return []

    def takes_text(self, store: MemoryStore) -> bool:
        return self.edits_text and store.editable

    def takes_long_term(self, store: MemoryStore) -> bool:
        return self.long_term and store.editable

    def restores(self, store: MemoryStore) -> bool:
        return self.takes_long_term(store)

    def long_term_text(self, snap: Snapshot) -> str | None:
        """What a long-term edit replaces; None where there is none."""
        return None

    def daily(self, snap: Snapshot) -> dict[str, str] | None:
        """Notes by day, where the store keeps them."""
        return None

    def export_content(self, snap: Snapshot) -> dict:
        """The content as an export's JSON has it (export.py renders the same fields as Markdown)."""
        return {"text": snap.text}

    def size(self, store: MemoryStore, snap: Snapshot | None = None) -> int:
        """The bytes the store holds, as its pages show them: by default its file's."""
        return store.size

    def written_at(self, store: MemoryStore, snap: Snapshot) -> datetime | None:
        """When the current version was written, as far as the files tell: by default the file's time."""
        return store.changed_at

    def page_context(self, store: MemoryStore, snap: Snapshot, filters: forms.Form) -> dict:
        """What the partial shows besides the snapshot; `filters` has been validated."""
        return {}

    def audit_detail(self, store: MemoryStore) -> dict:
        return {}

    def write_long_term(self, store: MemoryStore, text: str, base_version: str, editor: str) -> None:
        raise StoreError(f"{store.kind} stores have no long-term text to replace")

    def restore(self, store: MemoryStore, version: str, base_version: str, editor: str) -> None:
        raise StoreError(f"{store.title} cannot be restored to an earlier version here")

    def prune_preview(self, store: MemoryStore, days: int) -> list[str]:
        raise StoreError("prune applies to Bub memory zones only")


def _listed(store: MemoryStore) -> QuerySet[Revision]:
    # A list of versions needs none of their texts.
    return store.revisions.only("id", "store_id", "version", "seen_at", "origin").order_by("-seen_at", "-id")


def _revision_choice(r: Revision) -> VersionChoice:
    label = f"{r.seen_at:%Y-%m-%d %H:%M:%S} · {r.origin} · {r.version[:8]}"
    return VersionChoice(r.version, label, r.seen_at, r.summary, exact=r.origin != r.NOT_TEXT)


def parse_time(stamp: object) -> datetime | None:
    """An ISO time as an agent stored it, in UTC (naive taken as UTC); None for anything else."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        parsed = datetime.fromisoformat(stamp)
        return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ValueError, OverflowError):  # not a time, or one that has no UTC ("0001-01-01T00:00+01:00")
        return None
