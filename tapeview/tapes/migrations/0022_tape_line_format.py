from django.db import migrations, models


def reread_unreadable_bub(apps, schema_editor):
    # A tape in Bub's next format was read as 0.5.1 lines, every line unreadable: its next refresh
    # finds its format and reads it again (tapes.index._read_appended).
    Tape = apps.get_model("tapeview", "Tape")
    Tape.objects.filter(kind="bub", unreadable__gt=0).exclude(indexed_at=None).update(indexed_at=None)


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0021_source_folder"),
    ]

    operations = [
        migrations.AddField(
            model_name="tape",
            name="line_format",
            field=models.CharField(blank=True, default="", max_length=10),
        ),
        migrations.AddField(
            model_name="tape",
            name="foreign_line",
            field=models.IntegerField(null=True),
        ),
        migrations.RunPython(reread_unreadable_bub, migrations.RunPython.noop),
    ]
