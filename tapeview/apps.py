"""The tapes app."""

from django.apps import AppConfig


class TapeviewConfig(AppConfig):
    name = "tapeview"
    verbose_name = "Tapeview"
