"""Search as a second pass behind the offset index: its progress per tape, and docs laid out for bounded
ranking (the filters as tokens of the index; on SQLite, the filtered columns in a table of their own, so
filtering never reads a doc's text).

Docs are derived: they are dropped here, and the search pass reads them again from the files.
"""

from __future__ import annotations

import importlib

import django.db.models.deletion
from django.db import migrations, models

VendorSQL = importlib.import_module("tapeview.search.migrations.0001_initial").VendorSQL

SQLITE = [
    "DROP TABLE search_doc",
    "CREATE VIRTUAL TABLE search_doc USING fts5(body, tags, tokenize = 'unicode61 remove_diacritics 2')",
    """
    CREATE TABLE search_meta (
        id integer PRIMARY KEY,
        doc text NOT NULL,
        tape_id integer,
        pos integer,
        store_id integer,
        item text NOT NULL DEFAULT '',
        source text NOT NULL DEFAULT '',
        kind text NOT NULL DEFAULT '',
        name text NOT NULL DEFAULT '',
        date text NOT NULL DEFAULT ''
    )
    """,
]
SQLITE_BACK = [
    "DROP TABLE search_meta",
    "DROP TABLE search_doc",
    """
    CREATE VIRTUAL TABLE search_doc USING fts5(
        body,
        doc UNINDEXED, tape_id UNINDEXED, pos UNINDEXED, store_id UNINDEXED, item UNINDEXED,
        source UNINDEXED, kind UNINDEXED, name UNINDEXED, date UNINDEXED,
        tokenize = 'unicode61 remove_diacritics 2'
    )
    """,
]
# The tags go into the tsvector beside the words: the table keeps its shape, its docs are read again.
POSTGRESQL = ["TRUNCATE search_doc"]


def forget_stores(apps, schema_editor):
    """The memory docs went with the table: their stores are read again on the next memory search."""
    apps.get_model("search", "IndexedStore").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0009_tape_host"),
        ("search", "0001_initial"),
    ]

    operations = [
        VendorSQL("sqlite", SQLITE, SQLITE_BACK),
        VendorSQL("postgresql", POSTGRESQL, []),
        migrations.CreateModel(
            name="SearchedTape",
            fields=[
                (
                    "tape",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="tapeview.tape",
                    ),
                ),
                ("offset", models.BigIntegerField(default=0)),
                ("next_pos", models.IntegerField(default=1)),
            ],
        ),
        migrations.RunPython(forget_stores, migrations.RunPython.noop),
    ]
