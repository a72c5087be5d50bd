"""A database made by the version before the accounts app keeps its people, tokens and audit log."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tapeview.accounts import signin, tokens
from tapeview.accounts.models import AuditEvent

# The last migrations of the version whose tapes app held the sign-in links and API tokens and
# whose memory app held the audit log.
BEFORE = [("tapeview", "0002_apitoken"), ("memory_admin", "0001_initial"), ("accounts", None)]


def _migrate(targets: list[tuple[str, str | None]]):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    return executor.migrate(targets).apps


def _latest() -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_people_tokens_and_the_audit_log_survive_the_upgrade() -> None:
    old = _migrate(BEFORE)
    User = old.get_model("auth", "User")
    vera = User.objects.create(username="vera", password="!")
    old.get_model("tapeview", "ApiToken").objects.create(
        name="ci-bot", scope="write", digest=tokens._digest("tv_secret"), prefix="tv_secret"
    )
    old.get_model("tapeview", "SignInToken").objects.create(
        user=vera, digest=signin._digest("link"), expires_at=datetime.now(UTC) + timedelta(hours=1)
    )
    store = old.get_model("memory_admin", "MemoryStore").objects.create(
        key="abc123", source="home", kind="nanobot.memory", rel="workspace/memory/MEMORY.md", path="/x",
        title="MEMORY.md", owner="workspace",
    )  # fmt: skip
    events = old.get_model("memory_admin", "AuditEvent").objects
    events.create(user=vera, actor="vera", store=store, target="home: MEMORY.md", action="edit", diff="+a")
    events.create(actor="token:ci-bot", target="home: tape", action="handoff", detail={"tape": "t1"})

    _latest()

    assert tokens.verify("tv_secret").name == "ci-bot"  # the token still works
    assert signin.redeem("link").username == "vera"  # so does the sign-in link, once
    assert signin.redeem("link") is None
    edit, handoff = AuditEvent.objects.order_by("id")
    assert (edit.actor, edit.action, edit.subject, edit.diff) == ("vera", "edit", "store:abc123", "+a")
    assert edit.user.username == "vera"
    assert (handoff.subject, handoff.detail) == ("tape:t1", {"tape": "t1"})
    tables = connection.introspection.table_names()
    assert {"accounts_apitoken", "accounts_signintoken", "accounts_auditevent"} <= set(tables)
    assert not {"tapeview_apitoken", "tapeview_signintoken", "memory_admin_auditevent"} & set(tables)
