from django.db import migrations


def reread_nanobot(apps, schema_editor):
    # nanobot's summary checkpoints and archive pointer now count as anchors (tapes.index._account),
    # and its metadata record gives a phase no time (tapes.phase_tally): a nanobot session's next
    # refresh reads its file again whole (tapes.index._reread resets the tape first).
    Tape = apps.get_model("tapeview", "Tape")
    Tape.objects.filter(kind="nanobot").exclude(indexed_at=None).update(indexed_at=None)


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0014_tape_source_entries"),
    ]

    operations = [
        migrations.RunPython(reread_nanobot, migrations.RunPython.noop),
    ]
