"""The list of sessions, as the session index page and the API's tape list both filter it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django import forms
from django.db import connection
from django.db.models import Case, Count, Max, Q, QuerySet, Sum, Value, When

from tapeview.sources.spec import KNOWN_KINDS

from . import discovery, expression, usage
from .models import Tape

KINDS = KNOWN_KINDS  # the agent families a source can hold: the index filters by them


@dataclass(frozen=True)
class Narrowing:
    """A filter of the session list that another app applies (reviews: by label, by score).

    The app registers it from its AppConfig.ready(), so the tapes app imports none of them.
    """

    field: forms.Field  # validates the query string's value, and draws the control on the page
    narrow: Callable[[QuerySet[Tape], object], QuerySet[Tape]]


NARROWINGS: dict[str, Narrowing] = {}


def add_narrowing(
    name: str, field: forms.Field, narrow: Callable[[QuerySet[Tape], object], QuerySet[Tape]]
) -> None:
    NARROWINGS[name] = Narrowing(field, narrow)


def tapes(
    q: str | None = None,
    source: str | None = None,
    narrow: dict[str, object] | None = None,
    *,
    kind: str | None = None,
    errors: bool = False,
    host: str | None = None,
    expr: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[Tape]:
    """The sessions (attachments are listed with their tape) as the sources hold them now.

    `q` is looked for in the label, the file name and the last anchor; `source` is a label;
    `kind` an agent family (KINDS); `errors` keeps the tapes with at least one error; `host` the
    host that indexed them (a fleet's); `narrow` gives values of the registered narrowings; `expr`
    is an expression of the filter language (expression.FilterError when it is not one); `since`
    and `until` keep the sessions last active in [since, until), as the bars over time count them.
    """
    where = expression.tape_q(expr) if expr else Q()  # refused before any work
    discovery.sync_if_stale()
    found = Tape.objects.filter(where, owner__isnull=True)
    if q:
        found = found.filter(Q(label__icontains=q) | Q(name__icontains=q) | Q(last_anchor__icontains=q))
    if source:
        found = found.filter(source=source)
    if host:
        found = found.filter(host=host)
    if kind:
        found = found.filter(kind=kind)
    if errors:
        found = found.filter(errors__gt=0)
    if since:
        found = found.filter(last_at__gte=since)
    if until:
        found = found.filter(last_at__lt=until)
    for name, value in (narrow or {}).items():
        if value not in (None, "") and name in NARROWINGS:
            found = NARROWINGS[name].narrow(found, value)
    return found


def token_measure() -> Case:
    """What a session's Tokens figure is, as the token sort ranks it: the tape's total (0), a figure
    that is no total (1: nanobot's last turn, usage.PARTIAL) or none (2). Ranked first, the sort
    compares totals with totals and never places a last turn among them by its number."""
    return Case(
        When(tokens__isnull=True, then=Value(2)),
        When(kind__in=list(usage.PARTIAL), then=Value(1)),
        default=Value(0),
    )


def source_labels() -> list[str]:
    """The label of every source that has tapes, in order."""
    return _distinct("source")


def hosts() -> list[str]:
    """The hosts whose tapes the index holds, in order: more than one is a fleet's central index,
    and the pages show which host each tape is on."""
    return _distinct("host")


def _distinct(column: str) -> list[str]:
    """The values of an indexed column of the tapes, in order, by one step of its index per value
    (a loose index scan): DISTINCT would read every tape of a fleet."""
    table = Tape._meta.db_table
    sql = (
        f"WITH RECURSIVE v(x) AS (SELECT MIN({column}) FROM {table} UNION ALL "
        f"SELECT (SELECT MIN(t.{column}) FROM {table} t WHERE t.{column} > v.x) "
        "FROM v WHERE v.x IS NOT NULL) "
        "SELECT x FROM v WHERE x IS NOT NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return [value for (value,) in cursor.fetchall()]


BOUND = 10_000  # sessions counted exactly; past it a page says "more than" (or PostgreSQL's estimate)


@dataclass(frozen=True)
class Tally:
    """How many rows a list holds: exact up to BOUND; past it `more`, with PostgreSQL's estimate
    (`about`, None where there is none) instead of a count that reads every row."""

    n: int
    more: bool = False
    about: int | None = None

    def __bool__(self) -> bool:
        return self.more or self.n > 0

    def __str__(self) -> str:
        if not self.more:
            return str(self.n)
        return f"about {self.about:,}" if self.about else f"more than {self.n:,}"


def bounded_count(found: QuerySet, bound: int | None = None) -> Tally:
    """The rows of `found`, counted up to `bound` (BOUND; reading at most bound + 1 of them)."""
    bound = BOUND if bound is None else bound
    n = found.order_by().values("pk")[: bound + 1].count()
    return Tally(bound, more=True) if n > bound else Tally(n)


def sessions_total() -> Tally:
    """The sessions of the index (attachments are listed with their tape): exact up to BOUND,
    then PostgreSQL's estimate of the table's rows, labelled "about" (SQLite counts them)."""
    sessions = Tape.objects.filter(owner__isnull=True)
    tally = bounded_count(sessions)
    if not tally.more:
        return tally
    if connection.vendor != "postgresql":
        return Tally(sessions.count())
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [Tape._meta.db_table])
        row = cursor.fetchone()
    estimate = int(row[0]) if row and row[0] and row[0] > 0 else 0
    return Tally(BOUND, more=True, about=max(estimate, BOUND + 1) if estimate else None)


def sources_elsewhere() -> QuerySet:
    """The sources other hosts indexed into this database (this host's are its configured ones):
    host, source, and their sessions, the sessions' entries and last indexing."""
    others = (
        Tape.objects.exclude(host=discovery.this_host()).values("host", "source").order_by("host", "source")
    )
    session = Q(owner__isnull=True)  # as the session index counts them (see files_by_source)
    return others.annotate(
        tapes=Count("id", filter=session),
        entries=Sum("entries", filter=session),
        last_indexed=Max("indexed_at"),
    )


# What a file that is not a session of its own is to the one it belongs to, as the Sources page names it.
ATTACHED = {
    "sidecar": ("sidecar", "sidecars"),
    "archive": ("backup", "backups"),
    "fork": ("fork copy", "fork copies"),
}


@dataclass(frozen=True)
class SourceFiles:
    """A source's files as the session index counts them: the sessions (its rows), and the files
    listed with a session (sidecars, `.bak` backups, fork copies) that are not sessions of their own."""

    sessions: int = 0
    entries: int = 0  # the sessions' entries, as the index's rows add up
    attached: tuple[tuple[int, str], ...] = ()  # (how many, what), e.g. (2, "backups")
    attached_entries: int = 0

    @property
    def attached_files(self) -> int:
        return sum(n for n, _ in self.attached)


def files_by_source() -> dict[str, SourceFiles]:
    """Per source label of this host, its sessions and the other files listed with them."""
    rows = (
        Tape.objects.filter(host=discovery.this_host())
        .values("source", "role", attached=Q(owner__isnull=False))
        .order_by()
        .annotate(n=Count("id"), entries=Sum("entries"))
    )
    sessions: dict[str, list[int]] = {}
    attached: dict[str, dict[str, int]] = {}
    attached_entries: dict[str, int] = {}
    for row in rows:
        source = row["source"]
        sessions.setdefault(source, [0, 0])
        if row["attached"]:
            attached.setdefault(source, {})[row["role"]] = row["n"]
            attached_entries[source] = attached_entries.get(source, 0) + (row["entries"] or 0)
        else:  # a session, or an attachment whose tape is gone: the index lists it as a row
            sessions[source][0] += row["n"]
            sessions[source][1] += row["entries"] or 0
    out = {}
    for source, (n, entries) in sessions.items():
        held = attached.get(source, {})
        order = sorted(held, key=lambda role: (list(ATTACHED).index(role) if role in ATTACHED else 9, role))
        named = tuple((held[role], ATTACHED.get(role, (role, role))[held[role] != 1]) for role in order)
        out[source] = SourceFiles(n, entries, named, attached_entries.get(source, 0))
    return out


def kinds_held() -> list[str]:
    """The agent families that some session of the index belongs to, in KINDS order."""
    # One look per known family (the kind index): DISTINCT would read every tape.
    sessions = Tape.objects.filter(owner__isnull=True)
    return [kind for kind in KINDS if sessions.filter(kind=kind).exists()]
