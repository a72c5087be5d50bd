"""Cheaper writes of the search pass (search.catchup), measured on the real 200k-entry tape.

SQLite: FTS5 keeps up to 16 MB of a transaction's new terms in memory before it writes them as a
segment. With the default (1 MB) a batch of the pass was written as dozens of small segments, each
merged again soon after: its FTS5 inserts took 1.5-1.6 s, 1.05-1.2 s so. The setting is kept in the
table's own config.

PostgreSQL: the docs' text and tsvector are compressed with lz4 where the server has it (pglz took
0.7 s more of the pass's 11 s of server time). Rows written before keep pglz; both are read alike.
"""

from __future__ import annotations

from django.db import migrations
from django.db.utils import OperationalError

HASHSIZE = 16 * 1024 * 1024


def hashsize(size: int | None):
    def configure(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        with schema_editor.connection.cursor() as cursor:
            if size is None:
                cursor.execute("DELETE FROM search_doc_config WHERE k = 'hashsize'")
                return
            try:
                cursor.execute("INSERT INTO search_doc (search_doc, rank) VALUES ('hashsize', %s)", [size])
            except OperationalError:  # an SQLite whose FTS5 has no such setting keeps its own
                pass

    return configure


def compression(method: str):
    def alter(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        with schema_editor.connection.cursor() as cursor:
            # A server built without lz4 lists only pglz: it keeps that.
            cursor.execute("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
            row = cursor.fetchone()
            if row is None or method not in row[0]:
                return
            for column in ("body", "tsv"):
                cursor.execute(f"ALTER TABLE search_doc ALTER COLUMN {column} SET COMPRESSION {method}")

    return alter


class Migration(migrations.Migration):
    dependencies = [("search", "0002_search_pass")]

    operations = [
        migrations.RunPython(hashsize(HASHSIZE), hashsize(None)),
        migrations.RunPython(compression("lz4"), compression("pglz")),
    ]
