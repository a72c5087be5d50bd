"""The tapes app: the derived index of every tape, its pages and its API."""

from django.apps import AppConfig


class TapesConfig(AppConfig):
    name = "tapeview.tapes"
    # The label the index tables and migrations had when this app was the project package itself:
    # keeping it lets a database made by an earlier version migrate in place.
    label = "tapeview"
    verbose_name = "Tapes"
