from django.apps import AppConfig


class OtlpConfig(AppConfig):
    name = "tapeview.otlp"
    label = "otlp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tapeview.tapes import signals

        from . import live

        # The indexer's process sends what it indexes (TAPEVIEW_OTLP_ENDPOINT), in a thread of its own.
        signals.watching.connect(live.start, dispatch_uid="otlp-start")
        signals.indexer_idle.connect(live.wake, dispatch_uid="otlp-wake")
