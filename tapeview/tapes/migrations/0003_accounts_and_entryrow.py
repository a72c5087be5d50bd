"""Sign-in links and API tokens moved to the accounts app (tables and rows with them: accounts 0001);
the index's Entry is EntryRow, apart from the readers' Entry."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("tapeview", "0002_apitoken"),
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="SignInToken"),
                migrations.DeleteModel(name="ApiToken"),
            ]
        ),
        migrations.RenameModel(old_name="Entry", new_name="EntryRow"),
    ]
