"""The accounts app: people, roles, sign-in links, API tokens and the audit log."""

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "tapeview.accounts"
    label = "accounts"
    verbose_name = "Accounts"
