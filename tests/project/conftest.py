"""Fixtures of the project-wide browser tests: the demo site and one Chromium."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import Browser, sync_playwright

from tests.browser import CHROMIUM, FLAGS
from tests.project.demo_site import DemoSite


@pytest.fixture
def demo_site(live_server, settings, tmp_path: Path, user_factory) -> DemoSite:
    from memory_admin import catalog
    from memory_admin.models import MemoryStore
    from tapeview.alerts import evaluate
    from tapeview.alerts.conditions import Reading
    from tapeview.alerts.models import Rule
    from tapeview.reviews import ledger
    from tapeview.tapes import discovery
    from tapeview.tapes.models import Tape

    settings.TAPEVIEW_DEMO_DIR = tmp_path / "demo"
    settings.TAPEVIEW_SOURCES = ""
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    call_command("demo", stdout=io.StringIO())
    discovery.sync()
    catalog.sync_stores()
    user_factory("ada", "admin")

    tape = Tape.objects.filter(kind="bub", role="tape").order_by("-anchors").first()
    ledger.add(tape, 2, "ada", score=4, verdict="pass", labels=["helpful"], comment="clear first step")
    rule = Rule.objects.create(name="tool errors", condition="errors", threshold=3, minutes=10)
    said = Reading(True, 4, f"{tape.label}: 4 errors in the last 10 min (≥ 3)")
    evaluate.settle(rule, tape.key, tape, tape.label, said, tape.last_at or tape.indexed_at)
    other = Tape.objects.filter(kind="bub", role="tape").exclude(pk=tape.pk).order_by("-anchors").first()
    stores = MemoryStore.objects.filter(kind__startswith="nanobot")
    store = stores.filter(title="MEMORY.md").first() or stores.order_by("title").first()
    return DemoSite(
        url=live_server.url,
        pages={
            "sessions": "/",
            "timeline": f"/tapes/{tape.key}/",
            "context": f"/tapes/{tape.key}/context",
            "turns": f"/tapes/{tape.key}/turns/",
            "conversation": f"/tapes/{tape.key}/conversation/",
            "compare": f"/compare/?a={tape.key}&b={other.key}",
            "memory": "/memory/",
            "store": f"/memory/{store.key}/",
            "store-edit": f"/memory/{store.key}/edit",
            "store-blame": f"/memory/{store.key}/blame",
            "sources": "/sources/",
            "prices": "/prices/",
            "lineage": f"/tapes/{tape.key}/lineage",
            "search": "/search/?q=weather",
            "reviews": "/reviews/",
            "users": "/users/",
            "tokens": "/tokens/",
            "audit": "/audit/",
            "alerts": "/alerts/",
        },
    )


@pytest.fixture
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()
