"""An anchor's tape has no index of its own: the unique (tape, pos) constraint's index leads with it
and answers every look-up by tape, so the indexer writes one index less per anchor."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0016_anchor_flag"),
    ]

    operations = [
        migrations.AlterField(
            model_name="anchor",
            name="tape",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="anchor_rows",
                to="tapeview.tape",
            ),
        ),
    ]
