"""The audit log moved to the accounts app (its table and rows go with it: see accounts 0001)."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("memory_admin", "0001_initial"),
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="AuditEvent")]),
    ]
