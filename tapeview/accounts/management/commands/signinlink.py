"""`tapeview signinlink NAME`: print a one-time sign-in link for a user."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from tapeview.accounts import signin


class Command(BaseCommand):
    help = "Print a one-time sign-in link (valid 24 hours) for a user."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", nargs="?", default="admin")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, name: str, base_url: str, **options) -> None:
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise CommandError(f"no user named {name!r}")
        self.stdout.write(f"{base_url.rstrip('/')}/signin/{signin.issue(user)}/")
