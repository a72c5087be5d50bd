import django.db.models.deletion
from django.db import migrations, models
from django.db.models import F


def count_costs(apps, schema_editor):
    # The cost a tape held so far was the one the agent reported (araliya's spend.json). A Bub tape
    # that reported usage is read again whole at its next refresh (phase_count -1, as migration 0020
    # does), so its tokens are kept per model and priced.
    Tape = apps.get_model("tapeview", "Tape")
    Tape.objects.filter(cost__isnull=False).update(reported_cost=F("cost"), cost_source="reported")
    Tape.objects.filter(kind="bub", tokens__isnull=False).update(indexed_at=None, phase_count=-1)


class Migration(migrations.Migration):

    dependencies = [
        ('tapeview', '0023_agent_files'),
    ]

    operations = [
        migrations.CreateModel(
            name='PhaseUsage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('phase_index', models.IntegerField()),
                ('model', models.CharField(blank=True, max_length=200)),
                ('prompt_tokens', models.BigIntegerField(default=0)),
                ('completion_tokens', models.BigIntegerField(default=0)),
                ('cached_tokens', models.BigIntegerField(default=0)),
                ('calls', models.IntegerField(default=0)),
                ('reported_cost', models.FloatField(null=True)),
            ],
        ),
        migrations.AddField(
            model_name='tape',
            name='cost_source',
            field=models.CharField(blank=True, default='', max_length=10),
        ),
        migrations.AddField(
            model_name='tape',
            name='model_usage',
            field=models.JSONField(default=dict),
        ),
        migrations.AddField(
            model_name='tape',
            name='priced_with',
            field=models.CharField(blank=True, default='', max_length=16),
        ),
        migrations.AddField(
            model_name='tape',
            name='reported_cost',
            field=models.FloatField(null=True),
        ),
        migrations.AddIndex(
            model_name='tape',
            index=models.Index(fields=['cost'], name='tape_cost'),
        ),
        migrations.AddField(
            model_name='phaseusage',
            name='tape',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='phase_usage', to='tapeview.tape'),
        ),
        migrations.AddConstraint(
            model_name='phaseusage',
            constraint=models.UniqueConstraint(fields=('tape', 'phase_index', 'model'), name='phaseusage_tape_phase_model'),
        ),
        migrations.RunPython(count_costs, migrations.RunPython.noop),
    ]
