"""Tape.tokens is null where the agent recorded no usage ("–"), no longer 0."""

from django.db import migrations, models


def forget_zero_tokens(apps, schema_editor):
    Tape = apps.get_model("tapeview", "Tape")
    # 0 was written for every tape without usage: now that is null. nanobot sessions read their
    # usage (the metadata's _last_usage) only since this version: their next refresh reads them again.
    Tape.objects.filter(tokens=0).update(tokens=None)
    Tape.objects.filter(kind="nanobot").exclude(indexed_at=None).update(indexed_at=None)


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0005_phase_statistics"),
    ]

    operations = [
        migrations.AlterField(
            model_name="tape",
            name="tokens",
            field=models.BigIntegerField(null=True),
        ),
        migrations.RunPython(forget_zero_tokens, migrations.RunPython.noop),
    ]
