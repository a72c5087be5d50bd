"""`tapeview signinlink NAME`: print a one-time sign-in link for a user."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from tapeview import home
from tapeview.accounts import signin


class Command(BaseCommand):
    help = "Print a one-time sign-in link (valid 24 hours) for a user."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name", nargs="?", default="admin")
        parser.add_argument(
            "--base-url",
            default=None,
            help="default: where `tapeview serve` last answered (TAPEVIEW_BASE_URL)",
        )

    def handle(self, *args, name: str, base_url: str | None, **options) -> None:
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise CommandError(f"no user named {name!r}")
        base_url = base_url or home.base_url(settings.HOME)
        self.stdout.write(f"{base_url.rstrip('/')}/signin/{signin.issue(user)}/")
