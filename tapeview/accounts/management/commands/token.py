"""`tapeview token`: the API tokens of services.

`token create NAME --scope read|write|metrics [--expires-days N]`, `token list`, `token revoke NAME_OR_ID`.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from tapeview.accounts import tokens
from tapeview.accounts.audit import Actor, record
from tapeview.accounts.models import ApiToken

COMMAND_LINE = Actor("command line")  # who the audit log names for a change made here


class Command(BaseCommand):
    help = "Create, list and revoke the API tokens that services use."

    def add_arguments(self, parser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="create|list|revoke")
        create = actions.add_parser("create", help="create a token and print it once (its last line)")
        create.add_argument("name")
        create.add_argument(
            "--scope", choices=[ApiToken.READ, ApiToken.WRITE, ApiToken.METRICS], default=ApiToken.READ
        )
        create.add_argument("--expires-days", type=int, default=None)
        actions.add_parser("list", help="every token, live or not (never the token itself)")
        revoke = actions.add_parser("revoke", help="stop a token working")
        revoke.add_argument("ref", metavar="NAME_OR_ID")

    def handle(self, *args, action: str, **options) -> None:
        {"create": self.create, "list": self.list, "revoke": self.revoke}[action](**options)

    def create(self, *, name: str, scope: str, expires_days: int | None, **options) -> None:
        try:
            row, plaintext = tokens.create(name, scope, expires_days=expires_days)
        except tokens.TokenError as exc:
            raise CommandError(str(exc)) from None
        record(COMMAND_LINE, "token.create", **tokens.audited(row))
        until = f"until {row.expires_at:%Y-%m-%d %H:%M} UTC" if row.expires_at else "without expiry"
        self.stdout.write(f"created token {row.name} (id {row.pk}, {row.scope}, {until})")
        self.stdout.write("Store it now: it is not shown again. Send it as `Authorization: Bearer <token>`.")
        # The token is the last line, so a script can take it with `| tail -n 1`.
        self.stdout.write(plaintext)

    def list(self, **options) -> None:
        rows = ApiToken.objects.select_related("created_by").order_by("name", "-created_at")
        if not rows:
            self.stdout.write("no tokens")
            return
        self.stdout.write(f"{'id':>4}  {'name':<24} {'scope':<7} {'state':<8} {'token':<14} last used")
        for row in rows:
            used = f"{row.last_used_at:%Y-%m-%d %H:%M}" if row.last_used_at else "never"
            shown = f"{row.prefix}…"
            self.stdout.write(
                f"{row.pk:>4}  {row.name:<24} {row.scope:<7} {tokens.state(row):<8} {shown:<14} {used}"
            )

    def revoke(self, *, ref: str, **options) -> None:
        try:
            row = tokens.find(ref)
        except LookupError as exc:
            raise CommandError(str(exc)) from None
        if row.revoked_at is None:
            record(COMMAND_LINE, "token.revoke", **tokens.audited(tokens.revoke(row)))
        self.stdout.write(f"revoked token {row.name} (id {row.pk})")
