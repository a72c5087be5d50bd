"""Fewer merges of FTS5's segments (SQLite): a level's segments are merged once 16 of them are there,
not 4. Each doc's terms are then written again about half as often as the index grows (the real
200k-entry tape's search pass wrote 277 MB instead of 345 MB, and took 4.4-5.4 s instead of
5.5-6.2 s), and a term is looked up in up to 15 segments a level instead of 3: a common word's search
on that tape took the same 32-36 ms either way. The setting is kept in the table's own config.
"""

from __future__ import annotations

from django.db import migrations
from django.db.utils import OperationalError

AUTOMERGE = 16
DEFAULT = 4


def automerge(value: int):
    def configure(apps, schema_editor):
        if schema_editor.connection.vendor != "sqlite":
            return
        with schema_editor.connection.cursor() as cursor:
            try:
                cursor.execute("INSERT INTO search_doc (search_doc, rank) VALUES ('automerge', %s)", [value])
            except OperationalError:  # an SQLite whose FTS5 has no such setting keeps its own
                pass

    return configure


class Migration(migrations.Migration):
    dependencies = [("search", "0003_faster_writes")]

    operations = [migrations.RunPython(automerge(AUTOMERGE), automerge(DEFAULT))]
