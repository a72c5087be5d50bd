from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tapeview', '0022_tape_line_format'),
    ]

    operations = [
        migrations.AddField(
            model_name='tape',
            name='companion',
            field=models.CharField(blank=True, default='', max_length=100),
        ),
        migrations.AddField(
            model_name='tape',
            name='configured_model',
            field=models.CharField(blank=True, default='', max_length=200),
        ),
        migrations.AddField(
            model_name='tape',
            name='configured_window',
            field=models.BigIntegerField(null=True),
        ),
        migrations.AddField(
            model_name='tape',
            name='cost',
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name='tape',
            name='workdir',
            field=models.CharField(blank=True, default='', max_length=1000),
        ),
    ]
