"""One indexer per tape: a lease in the tape's row, taken and renewed by conditional UPDATEs.

A conditional UPDATE is atomic on SQLite and PostgreSQL alike, and its row count says who won; a
crashed indexer's lease runs out by itself.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from functools import cache

from django.db import connection
from django.db.models import Field, Q
from django.utils import timezone

from .models import Tape, db_text

# Renewed with every batch written, so only a crashed (or stalled) indexer lets it run out.
LEASE = timedelta(seconds=30)
POLL = 0.05
# What discovery writes (what a file is, see discovery._upsert); the indexer writes the rest (what
# is in it), so neither writer puts back an older value of a field the other one owns. Both may
# set the label: discovery's (from the source) wins at its next sync.
DISCOVERED = frozenset(
    {"id", "key", "host", "source", "kind", "rel", "path", "name", "role", "owner", "note", "append_only"}
    | {"configured_model", "configured_window", "workdir"}  # what the agent's files beside it say
)
LEASE_FIELDS = frozenset({"indexer", "indexing_until"})


class LeaseLost(Exception):
    """This indexer no longer owns the tape: its lease ran out and another took over, or the tape left."""


def lease_of(tape: Tape) -> str | None:
    """Take the tape's lease if nobody holds it (or the holder's ran out): its token, or None."""
    now = timezone.now()
    # A plain read first: on PostgreSQL the UPDATE below would wait for the row lock that the
    # owner's batch transaction holds, and pages must not wait for another request's indexing.
    if Tape.objects.filter(pk=tape.pk, indexing_until__gte=now).exists():
        return None
    token = uuid.uuid4().hex
    free = Q(indexing_until__isnull=True) | Q(indexing_until__lt=now)
    # One conditional UPDATE is atomic on both engines: its row count says who won.
    taken = Tape.objects.filter(free, pk=tape.pk).update(indexer=token, indexing_until=now + LEASE)
    return token if taken else None


def indexer_fields() -> list[Field]:
    return [f for f in Tape._meta.concrete_fields if f.name not in DISCOVERED and f.name not in LEASE_FIELDS]


def save(tape: Tape, lease: str) -> None:
    """Write the indexer's fields of the tape and renew the lease, if the lease is still ours."""
    fields = indexer_fields()
    values = [f.get_db_prep_save(db_text(getattr(tape, f.attname)), connection) for f in fields]
    until = Tape._meta.get_field("indexing_until").get_db_prep_save(timezone.now() + LEASE, connection)
    # In a batch's transaction this UPDATE comes first: it locks the row until the batch commits,
    # so nobody can take the tape over halfway through a batch. One plain statement: the ORM's
    # update() of these forty fields cost more than the batch's rows on PostgreSQL.
    with connection.cursor() as cursor:
        cursor.execute(_update_statement(), [*values, until, tape.pk, lease])
        saved = cursor.rowcount
    if not saved:
        raise LeaseLost(tape.key)


@cache
def _update_statement() -> str:
    quote = connection.ops.quote_name
    sets = ", ".join(
        f"{quote(f.column)} = %s" for f in [*indexer_fields(), Tape._meta.get_field("indexing_until")]
    )
    where = f"{quote(Tape._meta.pk.column)} = %s AND {quote(Tape._meta.get_field('indexer').column)} = %s"
    return f"UPDATE {quote(Tape._meta.db_table)} SET {sets} WHERE {where}"


def release(tape: Tape, lease: str) -> None:
    Tape.objects.filter(pk=tape.pk, indexer=lease).update(indexer="", indexing_until=None)
    tape.indexer, tape.indexing_until = "", None
