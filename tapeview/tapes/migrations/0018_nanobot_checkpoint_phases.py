from django.db import migrations


def reread_checkpoints(apps, schema_editor):
    # A nanobot summary checkpoint is no longer an entry of the phase it starts, as a Bub anchor
    # line is not (tapes.phase_tally.anchor_only), and the message the archive pointer names is now
    # one of the entries since it: a session with either is read again whole at its next refresh
    # (tapes.index._reread resets the tape first), so its phases agree with its header.
    Tape = apps.get_model("tapeview", "Tape")
    Anchor = apps.get_model("tapeview", "Anchor")
    cut = Anchor.objects.filter(name__in=("nanobot/summary", "nanobot/archived")).values("tape")
    Tape.objects.filter(kind="nanobot", pk__in=cut).exclude(indexed_at=None).update(indexed_at=None)


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0017_anchor_tape_index"),
    ]

    operations = [
        migrations.RunPython(reread_checkpoints, migrations.RunPython.noop),
    ]
