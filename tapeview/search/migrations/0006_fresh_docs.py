"""PostgreSQL: fresh docs, searchable before the GIN index holds them (search.fresh).

`search_fresh` holds a doc as `search_doc` does but for its tsvector: its words and tags as text;
`search_chunk` holds the words of a block of fresh docs under a GIN index of its own. Both start
empty: the docs made before stay in `search_doc`.
"""

from __future__ import annotations

from django.db import migrations

TABLES = [
    """
    CREATE TABLE search_fresh (
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
        words text NOT NULL,
        tags text NOT NULL DEFAULT ''
    )
    """,
    "CREATE TABLE search_chunk (id bigserial PRIMARY KEY, low bigint NOT NULL, high bigint NOT NULL, "
    "docs integer NOT NULL, words tsvector NOT NULL)",
    "CREATE INDEX search_chunk_words ON search_chunk USING GIN (words)",
    "CREATE INDEX search_chunk_low ON search_chunk (low)",  # the block `refine` moves next
]


def create(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        for statement in TABLES:
            cursor.execute(statement)
        # As search_doc's (migration 0003): lz4 where the server has it.
        cursor.execute("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
        if row is not None and "lz4" in row[0]:
            for column in ("body", "words"):
                cursor.execute(f"ALTER TABLE search_fresh ALTER COLUMN {column} SET COMPRESSION lz4")


def drop(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    # The fresh docs go with their table: every tape's search pass begins again (as migration 0005).
    apps.get_model("search", "SearchedTape").objects.update(offset=0, next_pos=1)
    apps.get_model("search", "IndexedStore").objects.all().delete()
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP TABLE search_chunk")
        cursor.execute("DROP TABLE search_fresh")


class Migration(migrations.Migration):
    dependencies = [("search", "0005_heads_and_tails")]

    operations = [migrations.RunPython(create, drop)]
