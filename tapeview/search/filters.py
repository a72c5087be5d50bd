"""The filters of a tape search as a Where: tags of the full-text index, tape ids, and columns."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from django.db import connection
from django.db.models import Q, Sum

from tapeview.reviews import ledger
from tapeview.tapes.models import SourceSize, Tape

from .docs import LAST_ID, LAST_POS, SHIFT, Picked, Where, tape_span

REVIEWED_LIMIT = 5000  # reviewed entries a search narrows to: far more than operators review by hand
# Tapes a source filter names by id at most; past it the filter reads the docs' own columns.
TAPE_LIST = 5000


def _reviewed_docs(label: str | None, score: int | None) -> list[int]:
    """The doc ids of the entries whose current review has this label and score."""
    found = ledger.find(label=label, score=score, current=True).values_list("tape_key", "pos")
    pairs = list(found[:REVIEWED_LIMIT])
    tapes = dict(Tape.objects.filter(key__in={k for k, _ in pairs}).values_list("key", "pk"))
    return sorted({tapes[key] << SHIFT | pos for key, pos in pairs if key in tapes and 0 < pos <= LAST_POS})


def tape_where(
    *,
    source: str | None = None,
    tape_key: str | None = None,
    kinds: list[str] | None = None,
    role: str | None = None,
    name: str | None = None,
    since: date | datetime | None = None,
    until: date | datetime | None = None,
    within: tuple[int, int] | None = None,
    review_label: str | None = None,
    review_score: int | None = None,
    kept: Q | None = None,
) -> Where | None:
    """The filters of a tape search as SQL; None when nothing can match. `kept` keeps the entries of
    the tapes it picks (the filter language's Q, tapes.expression)."""
    where = Where()
    where.span(1, LAST_ID)
    if kept is not None and not _picked(where, kept):
        return None
    if review_label or review_score is not None:
        ids = _reviewed_docs(review_label, review_score)
        if not ids:
            return None
        where.add(f"id IN ({', '.join(['%s'] * len(ids))})", *ids)
    if tape_key:
        tape_id = Tape.objects.filter(key=tape_key).values_list("pk", flat=True).first()
        if tape_id is None:
            return None
        first, last = within if within else (0, LAST_POS + 1)
        if last <= first:
            return None
        where.span(*tape_span(tape_id, first, last - 1))
    elif within:
        raise ValueError("searching within a phase needs a tape")
    if source and tape_key:
        where.tagged("s", source)  # within one tape's span a tag costs nothing to walk
    elif source:
        _of_source(where, source)
    if kinds:
        where.tagged("k", *kinds)
    if role:
        where.tagged("r", role)
    if name:
        where.below("name", name, "./")
    where.dates(since, until)
    if (since or until) and not tape_key and not _dated(where, since, until):
        return None
    return where


def _of_source(where: Where, source: str) -> None:
    """A source as a tag of the docs or, where it holds most of them, as what tells its docs apart
    without one: intersecting a word with a tag nearly every doc carries walks that tag's whole list
    (FTS5's, and PostgreSQL's GIN index's). SQLite then drops the docs of the few tapes it does not
    hold, told by their ids alone; PostgreSQL checks the source column of each candidate's row, read
    anyway (scale 1, source filter against none: the tag 1.23x, the column 0.98x)."""
    if connection.vendor == "postgresql":
        # Which is quicker is all the sizes decide (both are exact): the sources' bytes, one small table.
        found = SourceSize.objects.values("source").annotate(n=Sum("total_bytes")).values_list("source", "n")
        sizes = dict(found)
        if sizes.get(source, 0) >= sum(n for s, n in sizes.items() if s != source):
            where.add("source = %s", source)
        else:
            where.tagged("s", source)
        return
    entries = dict(Tape.objects.values("source").annotate(n=Sum("next_pos")).values_list("source", "n"))
    others = sum(n for s, n in entries.items() if s != source)
    if not others:
        return  # a source that holds every tape filters nothing
    if entries.get(source, 0) >= others:
        ids = list(Tape.objects.exclude(source=source).values_list("pk", flat=True)[: TAPE_LIST + 1])
        if len(ids) <= TAPE_LIST:
            where.of_tapes(ids, keep=False)
            return
    where.tagged("s", source)


def _picked(where: Where, tapes: Q) -> bool:
    """Only the docs of the tapes the filter picks, told by their ids as a date filter's are (a bitmap
    on SQLite, a subquery and its id windows on PostgreSQL); False when it picks none."""
    kept = Tape.objects.filter(tapes)
    if not kept.exists():  # also a filter that cannot match (a label no review can have)
        return False
    sql, params = kept.values("pk").query.sql_with_params()
    where.of_tapes(Picked(sql, params, kept.values("pk", "next_pos").query.sql_with_params()[0]), keep=True)
    return True


def _dated(where: Where, since: date | None, until: date | None) -> bool:
    """Only the docs of the tapes with an entry between the dates (their first and last dates say
    so), so a match of any other tape is dropped by its id, without a look at its date; False when
    no tape has one. SQLite tells a doc's tape by a bitmap of their ids (docs.Picked), made once a
    search; PostgreSQL, reading each candidate's row anyway, checks its date, and looks for its
    candidates in those tapes' id ranges alone (windows.Windows)."""
    kept = Tape.objects.filter(last_at__isnull=False)
    if since:
        kept = kept.filter(last_at__gte=_aware(since))
    if until:
        end = until + (timedelta(microseconds=1) if isinstance(until, datetime) else timedelta(days=1))
        kept = kept.filter(first_at__lt=_aware(end))
    sql, params = kept.values("pk").query.sql_with_params()
    if connection.vendor == "sqlite":  # each engine's own test of a doc's tape
        picked = Picked(sql, params)
        found = where.bitmap(picked) != b""
    else:  # the same parameters; the sizes read only for windows of the tapes (windows.Windows)
        picked = Picked(sql, params, kept.values("pk", "next_pos").query.sql_with_params()[0])
        found = kept.exists()
    if found:
        where.of_tapes(picked, keep=True, redundant=True)
    return found


def _aware(value: date) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime(value.year, value.month, value.day, tzinfo=UTC)
