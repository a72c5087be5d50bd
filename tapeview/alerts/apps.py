"""The alerts app: evaluated after each indexing pass, delivered by a thread beside the indexer."""

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "tapeview.alerts"
    label = "alerts"
    verbose_name = "Alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tapeview.tapes import signals

        from . import courier, evaluate

        # Only the indexer sends these (the watcher's ticks, `tapeview index`): a page never evaluates.
        signals.indexer_idle.connect(evaluate.indexer_idle, dispatch_uid="alerts-evaluate")
        signals.watching.connect(courier.start, dispatch_uid="alerts-courier")
