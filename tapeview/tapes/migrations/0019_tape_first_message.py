from django.db import migrations, models


def reread_yachiyo(apps, schema_editor):
    # Tape.first_message is filled as a session's entries are indexed: a yachiyo session indexed
    # before it existed is read again whole at its next refresh (tapes.index._reread), so its hover
    # shows the first message without waiting for yachiyo to save the session again.
    Tape = apps.get_model("tapeview", "Tape")
    Tape.objects.filter(kind="yachiyo").exclude(indexed_at=None).update(indexed_at=None)


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0018_nanobot_checkpoint_phases"),
    ]

    operations = [
        migrations.AddField(
            model_name="tape",
            name="first_message",
            field=models.CharField(blank=True, default="", max_length=300),
        ),
        migrations.RunPython(reread_yachiyo, migrations.RunPython.noop),
    ]
