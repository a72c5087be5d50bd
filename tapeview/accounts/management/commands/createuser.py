"""`tapeview createuser NAME --role viewer|operator|admin [--password-stdin]`."""

from __future__ import annotations

import getpass
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from tapeview.accounts.audit import Actor, record
from tapeview.accounts.roles import ROLES, set_role


class Command(BaseCommand):
    help = "Add a person who can sign in, with a role."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name")
        parser.add_argument("--role", choices=ROLES, default="viewer")
        parser.add_argument("--password-stdin", action="store_true", help="read the password from stdin")

    def handle(self, *args, name: str, role: str, password_stdin: bool, **options) -> None:
        User = get_user_model()
        if User.objects.filter(username=name).exists():
            raise CommandError(f"a user named {name!r} exists already")
        if password_stdin:
            password = sys.stdin.readline().rstrip("\n")
        else:
            password = getpass.getpass(f"Password for {name}: ")
            if password != getpass.getpass("Again: "):
                raise CommandError("the passwords differ")
        user = User(username=name)
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        user.set_password(password)
        user.save()
        set_role(user, role)
        record(Actor("command line"), "user.add", subject=f"user:{name}", target=name, after=role)
        self.stdout.write(f"created {name} ({role})")
