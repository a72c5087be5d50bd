"""Alerts sent to a real webhook on this machine: Slack's `text` and the alert's fields, each try's
outcome kept, retried with backoff, and never in the indexer's way."""

from __future__ import annotations

import shutil
import socket
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tapeview.alerts import courier, evaluate
from tapeview.alerts.models import Delivery, Rule
from tapeview.tapes import discovery, signals
from tapeview.tapes.models import Tape
from tapeview.tapes.watcher import Watcher

from .conftest import FIXTURES, Agent, Webhook, indexed


def errors_rule(url: str = "") -> Rule:
    return Rule.objects.create(name="tool errors", condition="errors", threshold=1, minutes=10, webhook=url)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.django_db
def test_a_firing_and_its_clearing_are_posted_as_slack_compatible_json(live, webhook) -> None:
    tape, agent = live
    errors_rule(webhook.url)
    agent.error()
    indexed(tape)
    got = webhook.next()
    assert got["type"] == "application/json"
    body = got["json"]
    assert body["text"] == f"[FIRING] tool errors: {tape.label}: 1 error in the last 10 min (≥ 1)"
    alert = body["alert"]
    assert (alert["event"], alert["state"], alert["rule"], alert["condition"]) == (
        "fired",
        "firing",
        "tool errors",
        "errors",
    )
    assert (alert["tape"], alert["source"], alert["label"], alert["value"]) == (
        tape.key,
        "bub",
        tape.label,
        1.0,
    )
    assert (alert["threshold"], alert["minutes"], alert["cleared_at"]) == (1.0, 10, None)
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.attempts, delivery.status_code, delivery.last_error) == (
        "delivered",
        1,
        200,
        "",
    )

    evaluate.run(timezone.now() + timedelta(minutes=11))
    courier.after_pass()
    cleared = webhook.next()["json"]
    assert cleared["text"].startswith(f"[cleared] tool errors: {tape.label}: 0 errors")
    assert (cleared["alert"]["event"], cleared["alert"]["state"]) == ("cleared", "cleared")
    assert cleared["alert"]["cleared_at"] is not None


@pytest.mark.django_db
def test_a_rule_without_a_webhook_of_its_own_goes_to_the_site_s(live, webhook, settings) -> None:
    tape, agent = live
    settings.TAPEVIEW_ALERT_WEBHOOK = webhook.url
    errors_rule()
    agent.error()
    indexed(tape)
    assert webhook.next()["json"]["alert"]["rule"] == "tool errors"


@pytest.mark.django_db
def test_a_webhook_that_is_down_is_recorded_and_indexing_goes_on(live, viewer_client) -> None:
    tape, agent = live
    port = closed_port()
    errors_rule(f"http://127.0.0.1:{port}/hook")
    agent.error()
    indexed(tape)
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.attempts, delivery.status_code) == ("pending", 1, None)
    assert delivery.last_error.startswith("cannot reach the webhook")
    assert delivery.next_at > timezone.now()  # tried again later, not now

    errors, entries = tape.errors, tape.entries
    agent.error()
    agent.event("loop.step", {"status": "ok"})
    indexed(tape)
    assert (tape.errors, tape.entries) == (errors + 1, entries + 2)  # the indexer carries on
    page = viewer_client.get("/alerts/").content.decode()
    assert "webhook pending after 1 try: cannot reach the webhook" in page

    hook = Webhook(port=port)  # the webhook is back when the retry falls due
    try:
        courier.attempt(delivery)
        assert hook.next()["json"]["alert"]["event"] == "fired"
    finally:
        hook.close()
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.status_code) == ("delivered", 2, 200)


@pytest.mark.django_db
def test_a_failing_webhook_is_tried_with_growing_pauses_then_given_up(live, viewer_client) -> None:
    tape, agent = live
    hook = Webhook(status=500)
    try:
        errors_rule(hook.url)
        agent.error()
        indexed(tape)
        delivery = Delivery.objects.get()
        pauses = [delivery.next_at - timezone.now()]
        while delivery.state == "pending":
            before = timezone.now()
            courier.attempt(delivery)
            pauses.append(delivery.next_at - before)
    finally:
        hook.close()
    assert (delivery.state, delivery.attempts, delivery.status_code) == ("failed", courier.MAX_ATTEMPTS, 500)
    assert delivery.last_error == "HTTP 500 Internal Server Error"
    waits = pauses[:-1]  # the last try gives up: no pause after it
    assert (
        all(a < b for a, b in zip(waits, waits[1:], strict=False)) and len(waits) == courier.MAX_ATTEMPTS - 1
    )
    assert (
        "webhook failed after 10 tries (HTTP 500): HTTP 500 Internal Server Error"
        in viewer_client.get("/alerts/").content.decode()
    )


def test_in_the_watcher_a_thread_of_its_own_sends(shared_db, settings, tmp_path: Path, webhook) -> None:
    """The watcher's `watching` signal starts the courier: the indexer's pass only wakes it."""
    root = tmp_path / "bub"
    root.mkdir()
    shutil.copy(FIXTURES / "bub" / "session_realistic.jsonl", root / "session_realistic.jsonl")
    settings.TAPEVIEW_SOURCES = f"bub=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    tape, agent = Tape.objects.get(source="bub"), Agent(root / "session_realistic.jsonl")
    errors_rule(webhook.url)
    stop = threading.Event()
    started = [
        t for _, t in signals.watching.send(sender=Watcher, stop=stop) if isinstance(t, threading.Thread)
    ]
    assert [t.name for t in started] == ["tapeview-alerts"]
    try:
        agent.error()
        indexed(tape)
        assert webhook.next()["json"]["alert"]["event"] == "fired"
    finally:
        stop.set()
        courier.after_pass()  # wakes it to see the stop
        started[0].join(10)
    assert not started[0].is_alive()
    assert Delivery.objects.get().state == "delivered"
