from django.db import migrations

# The session index's sort (newest first, then label A to Z, then key) and the API's (newest
# first, then id), each over the sessions alone, and the index's sort within one host: the first
# page reads its 50 rows off an index instead of sorting every tape. SQLite writes no NULLS LAST
# in an index; its DESC puts nulls last already.
INDEXES = {
    "tape_recent": "(last_at DESC{nulls}, LOWER(label), key) WHERE owner_id IS NULL",
    "tape_recent_id": "(last_at DESC{nulls}, id) WHERE owner_id IS NULL",
    "tape_host_recent": "(host, last_at DESC{nulls}, LOWER(label), key) WHERE owner_id IS NULL",
    "tape_kind": "(kind) WHERE owner_id IS NULL",
}


def create(apps, schema_editor):
    nulls = " NULLS LAST" if schema_editor.connection.vendor == "postgresql" else ""
    for name, columns in INDEXES.items():
        schema_editor.execute(f"CREATE INDEX {name} ON tapeview_tape {columns.format(nulls=nulls)}")


def drop(apps, schema_editor):
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0025_turn"),
    ]

    operations = [migrations.RunPython(create, drop)]
