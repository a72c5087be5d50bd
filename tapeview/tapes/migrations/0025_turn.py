import django.db.models.deletion
from django.db import migrations, models


def index_again(apps, schema_editor):
    # Turns are counted while a tape is indexed: every tape is read again whole at its next refresh
    # (phase_count -1, as migration 0020 does), so the turns of the tapes indexed before are counted.
    Tape = apps.get_model("tapeview", "Tape")
    Tape.objects.update(indexed_at=None, phase_count=-1)


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0024_cost"),
    ]

    operations = [
        migrations.CreateModel(
            name="Turn",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("number", models.IntegerField()),
                ("first_pos", models.IntegerField()),
                ("started_us", models.BigIntegerField(null=True)),
                ("ended_us", models.BigIntegerField(null=True)),
                ("carry", models.SmallIntegerField(default=0)),
                (
                    "tape",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="turn_rows",
                        to="tapeview.tape",
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("tape", "number"), name="turn_tape_number")],
            },
        ),
        migrations.RunPython(index_again, migrations.RunPython.noop),
    ]
