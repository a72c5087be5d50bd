"""Review queues: targets sent to be reviewed, assigned to reviewers, and how far each has got."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import BooleanField, Case, Count, Exists, OuterRef, Q, QuerySet, When
from django.http import Http404, QueryDict

from tapeview.accounts.audit import Actor, record
from tapeview.accounts.roles import has_role
from tapeview.tapes import listing, lookup
from tapeview.tapes.forms import TapeListForm
from tapeview.tapes.models import Tape

from .models import QUEUE_SPANS, Queue, QueueItem, Review

MAX_ADD = 5000  # items in one add: a filter that matches more is narrowed first
MAX_NAME = 100
AUDITED_ITEMS = 20  # the items an audit row names; it counts them all


class QueueRefused(ValueError):
    """Not a queue, item or assignment that can be: a 400 that says why."""


class NoSuchQueue(Http404, LookupError):
    """No queue has this id."""


class NoSuchItem(Http404, LookupError):
    """This queue has no item with this id."""


@dataclass(frozen=True)
class Target:
    """What an item asks to be reviewed: an entry, a turn (pos to end) or a whole session."""

    tape: Tape
    span: str = "session"
    pos: int | None = None
    end: int | None = None

    def words(self) -> str:
        if self.span == "session":
            return f"session {self.tape.key}"
        last = f"–#{self.end}" if self.span == "turn" else ""
        return f"{self.span} #{self.pos}{last} of {self.tape.key}"


@dataclass(frozen=True)
class Added:
    added: int
    skipped: int  # in the queue already


@dataclass
class Tally:
    total: int = 0
    done: int = 0


@dataclass
class Progress:
    """A queue's items, done of total, and the same per reviewer ("" for items not assigned)."""

    total: int = 0
    done: int = 0
    reviewers: dict[str, Tally] = field(default_factory=dict)


def find_queue(queue_id: int) -> Queue:
    queue = Queue.objects.filter(pk=queue_id).first()
    if queue is None:
        raise NoSuchQueue(f"no queue {queue_id}")
    return queue


def find_item(queue: Queue, item_id: int) -> QueueItem:
    item = with_state(queue.items.filter(pk=item_id)).select_related("reviewer").first()
    if item is None:
        raise NoSuchItem(f"queue {queue.pk} has no item {item_id}")
    return item


def create(name: str, description: str, actor: Actor) -> Queue:
    name = name.strip()
    if not name or len(name) > MAX_NAME or "\x00" in name + description:
        raise QueueRefused(f"a queue needs a name of 1 to {MAX_NAME} characters")
    try:
        with transaction.atomic():
            queue = Queue.objects.create(name=name, description=description.strip(), created_by=actor.name)
            record(actor, "queue.create", subject=f"queue:{queue.pk}", target=name)
    except IntegrityError:
        raise QueueRefused(f"a queue named {name!r} exists already") from None
    return queue


def target(tape_key: str, span: str = "session", pos: int | None = None, end: int | None = None) -> Target:
    """The target as the tape is now: NoSuchTape or NoSuchEntry (404s), QueueRefused for a bad span."""
    if span not in QUEUE_SPANS:
        raise QueueRefused(f"a queue's item is one of {', '.join(QUEUE_SPANS)}")
    tape = lookup.find_tape(tape_key)
    if span == "session":
        if pos is not None or end is not None:
            raise QueueRefused("a session's item names no entry")
        return Target(tape)
    if pos is None:
        raise QueueRefused(f"an item of one {span} names its entry (pos)")
    lookup.find_row(tape, pos)
    if span == "entry":
        if end not in (None, pos):
            raise QueueRefused("an item of one entry ends where it starts")
        return Target(tape, span, pos, pos)
    if end is None or not pos <= end <= lookup.MAX_POS:
        raise QueueRefused("an item of a turn names its last entry: pos <= end")
    lookup.find_row(tape, end)
    return Target(tape, span, pos, end)


def sessions_of(query: str) -> QuerySet[Tape]:
    """The sessions the session index lists for this query string (its filters; sort and page aside)."""
    form = TapeListForm(QueryDict(query))
    form.is_valid()  # as the index: a parameter that does not validate filters nothing
    data = form.cleaned_data
    return listing.tapes(
        data.get("q"),
        data.get("source"),
        form.narrowings(),
        kind=data.get("kind"),
        errors=bool(data.get("errors")),
        host=data.get("host"),
    ).order_by(*form.ordering())


def targets_of(query: str) -> list[Target]:
    found = list(sessions_of(query)[: MAX_ADD + 1])
    if len(found) > MAX_ADD:
        raise QueueRefused(f"this filter matches more than {MAX_ADD} sessions: narrow it first")
    return [Target(tape) for tape in found]


def add(
    queue: Queue,
    targets: Sequence[Target],
    actor: Actor,
    *,
    reviewer: AbstractBaseUser | None = None,
    query: str | None = None,
) -> Added:
    """Add the targets not in the queue yet, assigned to `reviewer` if given; one audit row."""
    if len(targets) > MAX_ADD:
        raise QueueRefused(f"at most {MAX_ADD} items at once")
    if reviewer is not None:
        check_reviewer(reviewer)
    held = set(queue.items.values_list("tape_key", "span", "pos"))
    new, seen = [], set()
    for t in targets:
        place = (t.tape.key, t.span, t.pos)
        if place in held or place in seen:
            continue
        seen.add(place)
        new.append(
            QueueItem(
                queue=queue, tape_key=t.tape.key, source=t.tape.source, rel=t.tape.rel, label=t.tape.label,
                span=t.span, pos=t.pos, end=t.end, reviewer=reviewer, added_by=actor.name,
            )
        )  # fmt: skip
    with transaction.atomic():
        before = queue.items.count()
        # Another add of the same target at once: its row stands, and this one is skipped.
        QueueItem.objects.bulk_create(new, ignore_conflicts=True)
        added = queue.items.count() - before
        detail = {
            "added": added,
            "skipped": len(targets) - added,
            "items": [t.words() for t in targets[:AUDITED_ITEMS]],
            "reviewer": reviewer.get_username() if reviewer is not None else None,
        }
        if query is not None:
            detail["query"] = query
        if added:
            record(actor, "queue.add", subject=f"queue:{queue.pk}", target=queue.name, detail=detail)
    return Added(added, len(targets) - added)


def check_reviewer(user: AbstractBaseUser) -> None:
    if not user.is_active or not has_role(user, "operator"):
        raise QueueRefused(f"{user.get_username()} cannot review: a reviewer holds the operator role")


def reviewers() -> list[AbstractBaseUser]:
    """The people who may be assigned: active, with the operator role or more."""
    people = get_user_model().objects.filter(is_active=True).order_by("username")
    return [u for u in people if has_role(u, "operator")]


def assign(
    queue: Queue, reviewer: AbstractBaseUser | None, actor: Actor, *, which: str = "unassigned"
) -> int:
    """Assign the queue's open items (`which`: "unassigned" ones, or "open" ones: every item not done)
    to `reviewer` (None: to nobody). The number of items changed."""
    if reviewer is not None:
        check_reviewer(reviewer)
    if which not in ("unassigned", "open"):
        raise QueueRefused("assign the unassigned items, or every open one")
    items = with_state(queue.items.all()).filter(done=False)
    if which == "unassigned":
        items = items.filter(reviewer__isnull=True)
    pks = list(items.values_list("pk", flat=True))
    with transaction.atomic():
        changed = QueueItem.objects.filter(pk__in=pks).update(reviewer=reviewer)
        name = reviewer.get_username() if reviewer is not None else None
        detail = {"reviewer": name, "which": which, "items": changed}
        record(actor, "queue.assign", subject=f"queue:{queue.pk}", target=queue.name, detail=detail)
    return changed


def remove(item: QueueItem, actor: Actor) -> None:
    with transaction.atomic():
        detail = {"item": item.pk, "tape": item.tape_key, "span": item.span, "pos": item.pos}
        record(actor, "queue.remove", subject=f"queue:{item.queue_id}", target=item.queue.name, detail=detail)
        item.delete()


def delete(queue: Queue, actor: Actor) -> None:
    with transaction.atomic():
        detail = {"name": queue.name, "items": queue.items.count()}
        record(actor, "queue.delete", subject=f"queue:{queue.pk}", target=queue.name, detail=detail)
        queue.delete()


def with_state(items: QuerySet[QueueItem]) -> QuerySet[QueueItem]:
    """The items with `done`: a review of the target recorded since the item was added."""
    since = Review.objects.filter(tape_key=OuterRef("tape_key"), created_at__gte=OuterRef("added_at"))
    of_target = since.filter(pos=OuterRef("pos"), span=OuterRef("span"))
    return items.annotate(
        done=Case(
            When(span="session", then=Exists(since)), default=Exists(of_target), output_field=BooleanField()
        )
    )


def progress(queues: Iterable[Queue]) -> dict[int, Progress]:
    """Each queue's progress by its id, in one query."""
    board = {q.pk: Progress() for q in queues}
    counted = (
        with_state(QueueItem.objects.filter(queue__in=list(board)))
        .values("queue_id", "reviewer__username")
        .order_by()
        .annotate(total=Count("pk"), done_n=Count("pk", filter=Q(done=True)))
    )
    for row in counted:
        p = board[row["queue_id"]]
        p.total += row["total"]
        p.done += row["done_n"]
        p.reviewers[row["reviewer__username"] or ""] = Tally(row["total"], row["done_n"])
    for p in board.values():
        p.reviewers = dict(sorted(p.reviewers.items(), key=lambda kv: (kv[0] == "", kv[0])))
    return board


def mark_gone(items: Iterable[QueueItem]) -> list[QueueItem]:
    """The items, each with `tape` (its index row, or None) and `gone`: no tape, or no entry there now."""
    items = list(items)
    tapes = Tape.objects.in_bulk({i.tape_key for i in items}, field_name="key")
    for i in items:
        i.tape = tapes.get(i.tape_key)
        last = i.end if i.span == "turn" else i.pos
        i.gone = i.tape is None or (last is not None and last >= i.tape.next_pos)
    return items


def neighbours(item: QueueItem, mine: AbstractBaseUser | None = None) -> tuple[int | None, int | None]:
    """The ids of the items before and after this one in the queue (of those assigned to `mine`)."""
    items = QueueItem.objects.filter(queue_id=item.queue_id)
    if mine is not None:
        items = items.filter(reviewer=mine)
    before = items.filter(pk__lt=item.pk).order_by("-pk").values_list("pk", flat=True).first()
    after = items.filter(pk__gt=item.pk).order_by("pk").values_list("pk", flat=True).first()
    return before, after


def next_open(queue: Queue, user: AbstractBaseUser | None, after: int = 0) -> int | None:
    """The first item not done after `after`: of those assigned to `user`, else of the unassigned."""
    open_items = with_state(queue.items.filter(pk__gt=after)).filter(done=False).order_by("pk")
    mine = open_items.filter(reviewer=user).values_list("pk", flat=True).first() if user else None
    return mine or open_items.filter(reviewer__isnull=True).values_list("pk", flat=True).first()
