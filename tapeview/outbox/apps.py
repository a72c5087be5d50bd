"""The outbox app: requests to write, queued in the database for the host that owns the file."""

from django.apps import AppConfig


class OutboxConfig(AppConfig):
    name = "tapeview.outbox"
    label = "outbox"
    verbose_name = "Outbox"
