"""A store's past as a list of steps, oldest first: each version, when it appeared, and who wrote it.

The adapters build the steps (kinds/: zone versions for Bub, revisions and git commits for nanobot,
revisions for the others); blame.py and asof.py only read them.
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from django.db.models import F

from tapeview.accounts.models import AuditEvent

from .models import MemoryStore

AGENT = "agent"  # the author of everything no Tapeview user wrote


@dataclass(frozen=True)
class Source:
    """Where a version (or a line) came from, as far as the files tell."""

    tape_id: str | None = None  # the tape holding the entry that wrote it
    pos: int | None = None  # that entry's position
    commit: str | None = None  # nanobot's git commit
    audit_id: int | None = None  # the audit row of a write made through Tapeview

    def merged(self, other: Source | None) -> Source:
        """This source with the fields it lacks taken from `other`."""
        if other is None:
            return self
        pairs = zip(_fields(self), _fields(other), strict=True)
        return Source(*(mine if mine is not None else theirs for mine, theirs in pairs))


@dataclass(frozen=True)
class Step:
    """One version as it appeared: what it held, when, and who wrote it."""

    version: str  # as versions.versions() names it: diffable with ?to=
    date: datetime | None  # None: the file records no time (PR #33-era Bub lines)
    text: str
    author: str = AGENT  # "agent", or the Tapeview user (the audit row's actor)
    source: Source | None = None
    note: str = ""  # how the source wrote it, in words ("memory_save call", "Dream's commit", ...)
    items: list = field(default_factory=list)  # the parsed content where the kind has it (a zone: [zone])
    place: tuple[str, int] | None = None  # (tape key, position) where the version sits in a tape


@dataclass(frozen=True)
class LineOrigin:
    """What a store's own records say about one line of its current content (yachiyo, araliya)."""

    date: datetime | None = None
    source: Source | None = None
    note: str = ""


def write_audits(store: MemoryStore, afters: Collection[str] | None = None) -> list[AuditEvent]:
    """The audit rows of the writes that changed this store through Tapeview, oldest first (`afters`:
    only those that wrote one of these versions)."""
    rows = (
        AuditEvent.objects.filter(subject=f"store:{store.key}").exclude(after="").exclude(before=F("after"))
    )
    if afters is not None:
        rows = rows.filter(after__in=list(afters))
    if any(f.name == "outcome" for f in AuditEvent._meta.get_fields()):
        # Where the log also keeps writes that did not happen (failed, or cut short), leave them out.
        rows = rows.exclude(outcome__in=("failed", "not written"))
    return list(rows.order_by("at", "id"))


def by_operator(audit: AuditEvent) -> tuple[str, Source]:
    return audit.actor, Source(audit_id=audit.id)


def revision_steps(store: MemoryStore) -> list[Step]:
    """Each revision Tapeview kept, and each later return to it written through Tapeview.

    A revision is kept once per version, so a write that brings an old version back appears only
    in the audit log: it counts as a step of its own there.
    """
    revisions = list(store.revisions.order_by("seen_at", "id"))
    texts = {r.version: r.text for r in revisions}
    seen = [(r.seen_at, 0, r.version, None) for r in revisions]
    audited = [(a.at, 1, a.after, a) for a in write_audits(store) if a.after in texts]
    steps: list[Step] = []
    for date, _, version, audit in sorted(seen + audited, key=lambda t: (t[0], t[1])):
        if steps and steps[-1].version == version:
            # A write's audit row and the revision it made are one step, by the writer (the row may
            # come first: a write is logged as an intent before it touches the file).
            if audit is not None and steps[-1].author == AGENT:
                steps[-1] = _written_by(steps[-1], audit)
            continue
        step = Step(version, date, texts[version])
        steps.append(step if audit is None else _written_by(step, audit))
    if steps and steps[-1].author == AGENT and steps[-1].version == store.version:
        # The file has held its current content since its mtime, which may be long before Tapeview
        # looked (not if it was written after the step before: then the mtime is of another write).
        with suppress(OSError):
            mtime = datetime.fromtimestamp(Path(store.path).stat().st_mtime, UTC)
            floor = steps[-2].date if len(steps) > 1 else None
            if steps[-1].date and mtime < steps[-1].date and (floor is None or floor < mtime):
                steps[-1] = replace(steps[-1], date=mtime)
    return steps


def _written_by(step: Step, audit: AuditEvent) -> Step:
    author, source = by_operator(audit)
    return replace(step, author=author, source=source, note=f"{audit.action} in Tapeview")


def collapse(steps: list[Step]) -> list[Step]:
    """Consecutive steps with the same text as one: the first's version, date and author.

    Dream's commit and the revision Tapeview kept of it are the same text, as are a Tapeview edit's
    commit and revision, or a zone and its copy in the memory sidecar; a later step of the same
    author fills in what the first's source lacks (the commit of a revision).
    """
    out: list[Step] = []
    for step in steps:
        if out and out[-1].text == step.text:
            first = out[-1]
            if first.author == step.author and step.source is not None:
                out[-1] = replace(first, source=(first.source or Source()).merged(step.source))
            continue
        out.append(step)
    return out


def _fields(source: Source) -> tuple:
    return (source.tape_id, source.pos, source.commit, source.audit_id)


def held_at(
    steps: list[Step], tape_key: str | None, pos: int | None, when: datetime | None, label: str
) -> int:
    """Which of the steps (oldest first) held at a point: an entry `pos` of a tape, or a time
    (LookupError before the first, or at an entry with no time)."""
    if tape_key is not None and pos is not None:
        # A zone kept in this very tape: its place in the file says exactly which version held.
        mine = [i for i, s in enumerate(steps) if s.place and s.place[0] == tape_key]
        if mine:
            before = [i for i in mine if steps[i].place[1] <= pos]  # type: ignore[index]
            i = before[-1] if before else mine[0] - 1
            if i < 0:
                raise LookupError(f"no version of this store as of {label}")
            return i
        if when is None:
            raise LookupError(f"{label} has no time (the tape records none): pick a time instead")
    assert when is not None
    dated = [(s.date, i) for i, s in enumerate(steps) if s.date is not None and s.date <= when]
    if not dated:
        raise LookupError(f"no version of this store as of {label or when.isoformat()}")
    return max(dated)[1]
