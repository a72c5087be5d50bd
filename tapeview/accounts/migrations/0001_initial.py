"""The accounts app takes over its tables where they were made before it existed.

Sign-in links and API tokens were models of the tapes app (tables tapeview_signintoken and
tapeview_apitoken), the audit log a model of the memory app (memory_admin_auditevent). These
operations only move the models in Django's state: the tables and their rows stay as they are, on a
new database (made by the earlier migrations) and on an upgraded one alike. 0002 renames them.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("tapeview", "0002_apitoken"),
        ("memory_admin", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SignInToken",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("digest", models.CharField(max_length=64, unique=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("expires_at", models.DateTimeField()),
                        ("used_at", models.DateTimeField(null=True)),
                        ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "tapeview_signintoken"},
                ),
                migrations.CreateModel(
                    name="ApiToken",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(max_length=100)),
                        ("scope", models.CharField(choices=[("read", "read"), ("write", "read and write")], default="read", max_length=5)),
                        ("digest", models.CharField(max_length=64, unique=True)),
                        ("prefix", models.CharField(max_length=16)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("expires_at", models.DateTimeField(blank=True, null=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        ("created_by", models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        "db_table": "tapeview_apitoken",
                        "ordering": ["name", "-created_at"],
                        "constraints": [models.UniqueConstraint(condition=models.Q(("revoked_at__isnull", True)), fields=("name",), name="apitoken_live_name")],
                    },
                ),
                migrations.CreateModel(
                    name="AuditEvent",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        ("actor", models.CharField(max_length=200)),
                        ("target", models.CharField(max_length=500)),
                        ("action", models.CharField(max_length=40)),
                        ("before", models.CharField(blank=True, max_length=64)),
                        ("after", models.CharField(blank=True, max_length=64)),
                        ("diff", models.TextField(blank=True)),
                        ("detail", models.JSONField(blank=True, default=dict)),
                        ("user", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ("store", models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="audit", to="memory_admin.memorystore")),
                    ],
                    options={"db_table": "memory_admin_auditevent", "ordering": ["-at", "-id"]},
                ),
            ],
        ),
    ]
