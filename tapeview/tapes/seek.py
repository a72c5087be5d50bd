"""The session index's pages by keyset: each page the rows after (or before) a cursor's row in the
sort, read off the sort's index, so page 500 costs what page 1 does whatever the fleet holds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import models
from django.db.models import Q, QuerySet
from django.db.models.functions import Lower

from .api import cursor as cursor_codec
from .models import Tape


class BadCursor(ValueError):
    """A cursor the index did not hand out, or one of another sort: the page starts again."""


@dataclass
class Page:
    """One page of the index: its rows, and the cursors of the pages either side (None: none)."""

    rows: list[Tape]
    next_cursor: str | None
    previous_cursor: str | None
    paginator: Any = None  # what counts the list (the view's bounded Paginator), for the header
    number: int | None = None  # 1 on the first page; later pages do not know where they are

    def __iter__(self):  # noqa: ANN204 - as a Paginator's page is, for the template's loop
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def has_next(self) -> bool:
        return self.next_cursor is not None

    @property
    def has_previous(self) -> bool:
        return self.previous_cursor is not None


def page(
    found: QuerySet[Tape],
    sort: str,
    field: str,
    text: bool,
    limit: int,
    after: str | None = None,
    before: str | None = None,
) -> Page:
    """The page of `found` in the index's order for `sort` (`field` by `sort`'s direction, nulls last
    either way, then the label as people read it, then the key), after the cursor `after` or before
    `before`; the first page with neither. BadCursor for a cursor of another sort or none of ours."""
    desc = sort.startswith("-")
    value = Lower(field) if text else models.F(field)
    rows = found.annotate(seek_value=value, seek_label=Lower("label"))
    forward = value.desc(nulls_last=True) if desc else value.asc(nulls_last=True)
    if before:
        v, label, key = _decode(before, sort, field, text)
        backward = value.asc(nulls_first=True) if desc else value.desc(nulls_first=True)
        got = list(
            rows.filter(_preceding(desc, v, label, key)).order_by(backward, Lower("label").desc(), "-key")[
                : limit + 1
            ]
        )
        earlier = len(got) > limit
        got = got[:limit][::-1]
        return Page(
            got, _encode(sort, got[-1]) if got else before, _encode(sort, got[0]) if earlier else None
        )
    if after:
        v, label, key = _decode(after, sort, field, text)
        rows = rows.filter(_following(desc, v, label, key))
    got = list(rows.order_by(forward, Lower("label"), "key")[: limit + 1])
    later = len(got) > limit
    got = got[:limit]
    previous = _encode(sort, got[0]) if after and got else None
    return Page(got, _encode(sort, got[-1]) if later else None, previous)


def _following(desc: bool, v: object, label: str, key: str) -> Q:
    tie = Q(seek_label__gt=label) | Q(seek_label=label, key__gt=key)
    if v is None:
        return Q(seek_value__isnull=True) & tie
    beyond = Q(**{f"seek_value__{'lt' if desc else 'gt'}": v})
    return beyond | Q(seek_value__isnull=True) | (Q(seek_value=v) & tie)


def _preceding(desc: bool, v: object, label: str, key: str) -> Q:
    tie = Q(seek_label__lt=label) | Q(seek_label=label, key__lt=key)
    if v is None:
        return Q(seek_value__isnull=False) | (Q(seek_value__isnull=True) & tie)
    return Q(**{f"seek_value__{'gt' if desc else 'lt'}": v}) | (Q(seek_value=v) & tie)


def _encode(sort: str, row: Tape) -> str:
    v = row.seek_value
    v = v.isoformat() if isinstance(v, datetime) else v
    return cursor_codec.pack([sort, v, row.seek_label, row.key])


def _decode(cursor: str, sort: str, field: str, text: bool) -> tuple[Any, str, str]:
    try:
        got = cursor_codec.unpack(cursor)
    except cursor_codec.BadCursor:
        raise BadCursor(cursor) from None
    if not (isinstance(got, list) and len(got) == 4 and got[0] == sort):
        raise BadCursor(cursor)
    _, v, label, key = got
    if not (isinstance(label, str) and isinstance(key, str)):
        raise BadCursor(cursor)
    return sort_value(field, v, text), label, key


BIG = 2**62  # the largest integer a cursor may carry: past it, not one of ours


def sort_value(field: str, v: object, text: bool = False) -> object:
    """A cursor's sort value, checked against the column's type before it reaches a query
    (`text`: the column is sorted as text, whatever its type). BadCursor otherwise."""
    if v is None:
        return None
    column = Tape._meta.get_field(field)
    if (text or isinstance(column, models.CharField)) and isinstance(v, str):
        return v
    if isinstance(column, models.DateTimeField) and isinstance(v, str):
        try:
            moment = datetime.fromisoformat(v)
        except ValueError:
            raise BadCursor(v) from None
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if isinstance(column, models.FloatField) and type(v) in (int, float) and math.isfinite(v):
        return float(v)
    if isinstance(column, models.IntegerField) and type(v) is int and abs(v) < BIG:
        return v
    raise BadCursor(str(v))
