"""The metrics app: the index's figures read at scrape time, and this process's request counts."""

from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "tapeview.metrics"
    label = "metrics"
    verbose_name = "Metrics"
