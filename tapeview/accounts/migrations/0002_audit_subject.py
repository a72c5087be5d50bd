"""The audit log names what it wrote to by key, not by a link into the (derived) memory index.

Each row's store becomes `subject` "store:<store key>", a handoff's tape "tape:<tape key>"; then
the link to the memory app goes, and the tables take the accounts app's names. No row is lost.
"""

from django.db import migrations, models


def subjects(apps, schema_editor):
    AuditEvent = apps.get_model("accounts", "AuditEvent")
    for event in AuditEvent.objects.select_related("store").iterator():
        if event.store_id is not None:
            event.subject = f"store:{event.store.key}"
        elif isinstance(event.detail, dict) and isinstance(event.detail.get("tape"), str):
            event.subject = f"tape:{event.detail['tape']}"
        else:
            continue
        event.save(update_fields=["subject"])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
        ("memory_admin", "0002_auditevent_to_accounts"),
        ("tapeview", "0003_accounts_and_entryrow"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditevent",
            name="subject",
            field=models.CharField(blank=True, db_index=True, max_length=100),
        ),
        migrations.RunPython(subjects, migrations.RunPython.noop),
        migrations.RemoveField(model_name="auditevent", name="store"),
        migrations.AlterModelTable(name="signintoken", table=None),
        migrations.AlterModelTable(name="apitoken", table=None),
        migrations.AlterModelTable(name="auditevent", table=None),
    ]
