"""The search docs table, one per backend, and the memory stores' index marks."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class VendorSQL(migrations.RunSQL):
    """RunSQL on one database vendor only: FTS5 and tsvector have nothing in common."""

    def __init__(self, vendor: str, sql: list[str], reverse_sql: list[str]) -> None:
        super().__init__(sql, reverse_sql)
        self.vendor = vendor

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == self.vendor:
            super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor == self.vendor:
            super().database_backwards(app_label, schema_editor, from_state, to_state)


# A doc's id says what it is: tape_id << 32 | pos for an entry, -(store_id << 32 | n) for a memory item,
# so a tape's docs (or a phase of them) are one id range, which both engines find by index.
SQLITE = [
    """
    CREATE VIRTUAL TABLE search_doc USING fts5(
        body,
        doc UNINDEXED, tape_id UNINDEXED, pos UNINDEXED, store_id UNINDEXED, item UNINDEXED,
        source UNINDEXED, kind UNINDEXED, name UNINDEXED, date UNINDEXED,
        tokenize = 'unicode61 remove_diacritics 2'
    )
    """
]
POSTGRESQL = [
    """
    CREATE TABLE search_doc (
        id bigint PRIMARY KEY,
        doc varchar(10) NOT NULL,
        tape_id bigint,
        pos integer,
        store_id bigint,
        item text NOT NULL DEFAULT '',
        source text NOT NULL DEFAULT '',
        kind text NOT NULL DEFAULT '',
        name text NOT NULL DEFAULT '',
        date text NOT NULL DEFAULT '',
        body text NOT NULL,
        tsv tsvector NOT NULL
    )
    """,
    "CREATE INDEX search_doc_tsv ON search_doc USING GIN (tsv)",
]


def reindex_tapes(apps, schema_editor):
    """The index is derived: tapes indexed before search existed are read again on the next sync.

    A changed inode is the indexer's own signal of a replaced file: it resets the tape and reads it whole.
    """
    apps.get_model("tapeview", "Tape").objects.filter(indexed_at__isnull=False).update(inode=-1)


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("tapeview", "0001_initial"),
        ("memory_admin", "0001_initial"),
    ]

    operations = [
        VendorSQL("sqlite", SQLITE, ["DROP TABLE search_doc"]),
        VendorSQL("postgresql", POSTGRESQL, ["DROP TABLE search_doc"]),
        migrations.CreateModel(
            name="IndexedStore",
            fields=[
                (
                    "store",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="memory_admin.memorystore",
                    ),
                ),
                ("size", models.BigIntegerField(default=0)),
                ("changed_at", models.DateTimeField(null=True)),
            ],
        ),
        migrations.RunPython(reindex_tapes, migrations.RunPython.noop),
    ]
