"""Every tape's docs made again, by the rule that keeps a long entry's end searchable.

Docs were made of an entry's first 16,000 characters only, and of a line too long to parse (over
4 MB) by its kind alone; now of a long entry's first 12,000 and last 4,000 characters, and of such a
line by the strings in its first 64 KB (search.entries). Every tape's search progress goes back to
its start. Its docs stay meanwhile, searchable as they were, and the search pass replaces each in
place (a doc's id is its place) as it reads the tape again; the search page counts the entries not
yet redone as not yet searchable. All tapes rather than those with a long doc: the old docs of long
lines are short, so no test of a doc's length finds them, and this is one UPDATE, where such a test
reads the text of every doc.
"""

from __future__ import annotations

from django.db import migrations


def redo(apps, schema_editor) -> None:
    apps.get_model("search", "SearchedTape").objects.update(offset=0, next_pos=1)


class Migration(migrations.Migration):
    dependencies = [("search", "0004_automerge")]

    operations = [migrations.RunPython(redo, migrations.RunPython.noop)]
