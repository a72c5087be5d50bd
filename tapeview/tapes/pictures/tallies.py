"""The numbers behind a tape's pictures, each gathered by one aggregate query in a fixed number
of buckets: a tape of a million entries costs the database a scan and Python a few hundred
numbers, never its rows. Kept in the cache until the tape's index changes."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import (
    BigIntegerField,
    Case,
    CharField,
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    Func,
    IntegerField,
    Max,
    Min,
    Q,
    Value,
    When,
)
from django.db.models.functions import Cast

from ..models import EntryRow, Tape

SPARK_BUCKETS = 40
STRIP_BUCKETS = 200
PHASE_BARS = 60
# The aggregates of a tape change only when its rows do; the session list draws fifty at a time.
CACHE_SECONDS = 600
MARKS = ("anchor", "error", "call")
MARK_WORDS = {
    "anchor": ("anchor", "anchors"),
    "error": ("error", "errors"),
    "call": ("tool call", "tool calls"),
}


@dataclass(frozen=True)
class Activity:
    """Entries per bucket over a tape's life (`by` "time"), or along its positions ("position")."""

    counts: tuple[int, ...]
    by: str
    span_s: float  # first to last entry's date; 0 by position


@dataclass(frozen=True)
class Mark:
    """The anchors, errors or tool calls of one bucket of positions."""

    what: str  # anchor | error | call
    bucket: int
    count: int
    first_pos: int
    last_pos: int
    name: str  # the anchor's name when the bucket holds one anchor


@dataclass(frozen=True)
class Marks:
    marks: tuple[Mark, ...]
    buckets: int
    positions: int  # the tape's lines: entries and unreadable ones


class EpochSeconds(Func):
    """A datetime column as seconds since 1970, on SQLite and PostgreSQL."""

    output_field = FloatField()

    def as_sqlite(self, compiler, connection, **extra):
        template = "((julianday(%(expressions)s) - 2440587.5) * 86400.0)"
        return self.as_sql(compiler, connection, template=template, **extra)

    def as_postgresql(self, compiler, connection, **extra):
        template = "EXTRACT(EPOCH FROM %(expressions)s)::double precision"
        return self.as_sql(compiler, connection, template=template, **extra)


class Truncated(Func):
    """A non-negative number rounded down to an integer (a bucket's number)."""

    output_field = IntegerField()

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="CAST(%(expressions)s AS INTEGER)", **extra)

    def as_postgresql(self, compiler, connection, **extra):
        template = "CAST(FLOOR(%(expressions)s) AS INTEGER)"
        return self.as_sql(compiler, connection, template=template, **extra)


def _position_bucket(positions: int, buckets: int) -> ExpressionWrapper:
    # Integer division on both databases; bigint so that pos * buckets cannot overflow.
    big = BigIntegerField()
    pos = Cast(F("pos"), big) - Value(1, output_field=big)
    return ExpressionWrapper(
        pos * Value(buckets, output_field=big) / Value(positions, output_field=big), output_field=big
    )


def _cached(kind: str, tape: Tape, compute):
    state = (tape.pk, tape.key, tape.next_pos, tape.indexed_offset, tape.size, tape.mtime_ns)
    key = "tapeview:pictures:" + ":".join(map(str, (kind, *state)))
    found = cache.get(key)
    if found is None:
        found = compute()
        cache.set(key, found, CACHE_SECONDS)
    return found


def activity(tape: Tape, buckets: int = SPARK_BUCKETS) -> Activity:
    """Entries per time bucket from the first entry's date to the last's; by position when the
    tape's dates are unknown (or all the same). One aggregate query, at most `buckets` rows."""
    return _cached(f"activity{buckets}", tape, lambda: _activity(tape, buckets))


def _activity(tape: Tape, buckets: int) -> Activity:
    rows = EntryRow.objects.filter(tape=tape)
    if tape.first_at is not None and tape.last_at is not None and tape.last_at > tape.first_at:
        span = (tape.last_at - tape.first_at).total_seconds()
        scaled = ExpressionWrapper(
            (EpochSeconds("date") - Value(tape.first_at.timestamp())) * Value(buckets / span),
            output_field=FloatField(),
        )
        grouped = rows.filter(date__isnull=False).annotate(b=Truncated(scaled))
        return Activity(_counts(grouped, buckets), "time", span)
    positions = max(tape.next_pos - 1, 0)
    buckets = min(buckets, positions)  # a short tape: a bar per entry
    if not buckets:
        return Activity((), "position", 0.0)
    grouped = rows.annotate(b=_position_bucket(positions, buckets))
    return Activity(_counts(grouped, buckets), "position", 0.0)


def _counts(grouped, buckets: int) -> tuple[int, ...]:
    """Rows per bucket `b`; a row indexed since the tape was read, or dated past its last
    entry's date, counts in the last bucket."""
    counts = [0] * buckets
    for row in grouped.values("b").annotate(n=Count("pk")).order_by():
        counts[min(max(row["b"], 0), buckets - 1)] += row["n"]
    return tuple(counts)


def marks(tape: Tape, buckets: int = STRIP_BUCKETS) -> Marks:
    """Where the anchors, errors and tool calls fall, in at most `buckets` buckets of positions
    (one per position on a shorter tape). One aggregate query, at most 3 * buckets rows."""
    return _cached(f"marks{buckets}", tape, lambda: _marks(tape, buckets))


def _marks(tape: Tape, buckets: int) -> Marks:
    positions = max(tape.next_pos - 1, 0)
    buckets = min(buckets, positions)
    if buckets == 0:
        return Marks((), 0, 0)
    what = Case(
        When(is_error=True, then=Value("error")),
        When(kind="anchor", then=Value("anchor")),
        default=Value("call"),
        output_field=CharField(),
    )
    grouped = (
        EntryRow.objects.filter(tape=tape)
        .filter(Q(is_error=True) | Q(kind__in=("anchor", "tool_call")))
        .annotate(b=_position_bucket(positions, buckets), what=what)
        .values("b", "what")
        .annotate(n=Count("pk"), first=Min("pos"), last=Max("pos"), label=Min("name"))
        .order_by()
    )
    found = [
        Mark(r["what"], min(max(r["b"], 0), buckets - 1), r["n"], r["first"], r["last"], r["label"] or "")
        for r in grouped
    ]
    found.sort(key=lambda m: (MARKS.index(m.what), m.bucket))
    return Marks(tuple(found), buckets, positions)
