"""The pages of a write to another host's file: the queued panel, its polling, its outcome, Cancel."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tapeview.accounts.models import AuditEvent
from tapeview.outbox import queue
from tapeview.outbox.models import Courier, Request
from tapeview.tapes import discovery, filecopy
from tapeview.tapes.models import Tape


@pytest.fixture
def on_host_a(db, settings, bub_home: Path):
    """The sample tapes indexed by host-a's watcher; this process is the web tier, which waits not."""
    settings.TAPEVIEW_SOURCES = f"home=bub:{bub_home}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    settings.TAPEVIEW_OUTBOX_WAIT_SECONDS = 0
    settings.TAPEVIEW_HOST = "host-a"
    settings.TAPEVIEW_COPY_FILES = True  # as its watcher does: the web tier's pages read the copies
    discovery.sync()
    filecopy.keep_tapes(Tape.objects.filter(host="host-a"))  # its copy pass, behind the index
    settings.TAPEVIEW_HOST = "web"
    return Tape.objects.get(label="telegram:-1001234567890")


def test_a_handoff_to_another_hosts_tape_shows_the_queued_panel_with_cancel(
    operator_client, on_host_a
) -> None:
    Courier.objects.create(host="host-a", beat_at=timezone.now() - timedelta(minutes=5))
    r = operator_client.post(f"/tapes/{on_host_a.key}/handoff", {"name": "phase/queued"})
    page = r.content.decode()
    assert r.status_code == 202
    assert "Queued on host host-a" in page
    assert "Host host-a has not been seen for 5 minutes: the request is queued" in page
    queued = Request.objects.get()
    assert f'hx-get="/outbox/{queued.key}/"' in page and 'hx-trigger="every 2s"' in page
    assert f'action="/outbox/{queued.key}/cancel"' in page and "Cancel this request" in page
    assert "<script>" not in page  # CSP: htmx attributes only
    assert AuditEvent.objects.get(action="outbox.queued").subject == f"tape:{on_host_a.key}"


def test_the_panel_turns_into_the_outcome_once_host_a_carried_it_out(
    operator_client, on_host_a, settings
) -> None:
    operator_client.post(f"/tapes/{on_host_a.key}/handoff", {"name": "phase/done"})
    queued = Request.objects.get()
    settings.TAPEVIEW_HOST = "host-a"  # this process, as host-a's watcher
    queue.carry_out(queue.claim())
    settings.TAPEVIEW_HOST = "web"
    panel = operator_client.get(f"/outbox/{queued.key}/", headers={"HX-Request": "true"}).content.decode()
    assert panel.lstrip().startswith('<div id="outbox-panel"') and "Written on host host-a: ids" in panel
    assert "hx-trigger" not in panel and "Cancel this request" not in panel
    assert [e.action for e in AuditEvent.objects.order_by("id")] == [
        "outbox.queued",
        "handoff",
        "outbox.done",
    ]


def test_a_busy_tape_on_host_a_says_what_the_page_says_today(operator_client, on_host_a, settings) -> None:
    operator_client.post(f"/tapes/{on_host_a.key}/handoff", {"name": "phase/busy"})
    queued = Request.objects.get()
    settings.TAPEVIEW_HOST, settings.TAPEVIEW_QUIET_SECONDS = "host-a", 3600
    os.utime(on_host_a.path)  # the agent wrote just now
    queue.carry_out(queue.claim())
    panel = operator_client.get(f"/outbox/{queued.key}/").content.decode()
    assert "The agent is busy: the tape changed" in panel and "Nothing was written" in panel


def test_two_handoffs_queued_for_one_tape_both_land_the_second_after_the_first(
    operator_client, on_host_a, settings
) -> None:
    """The second finds the tape just written by the first (quiet for under a second): it waits and
    is written, not answered 409 busy by Tapeview's own write."""
    for name in ("phase/first", "phase/second"):
        operator_client.post(f"/tapes/{on_host_a.key}/handoff", {"name": name})
    settings.TAPEVIEW_HOST, settings.TAPEVIEW_QUIET_SECONDS = "host-a", 0.5
    done = [queue.carry_out(queue.claim()) for _ in range(2)]
    assert [(r.state, r.status) for r in done] == [(Request.DONE, 201), (Request.DONE, 201)], [
        r.body for r in done
    ]
    tape = Path(on_host_a.path).read_text()
    assert tape.index('"phase/first"') < tape.index('"phase/second"')


def test_cancel_from_the_page_and_no_watcher_runs_it(operator_client, on_host_a, settings) -> None:
    operator_client.post(f"/tapes/{on_host_a.key}/handoff", {"name": "phase/cancelled"})
    queued = Request.objects.get()
    r = operator_client.post(f"/outbox/{queued.key}/cancel", follow=True)
    assert "Cancelled by olga: nothing was written" in r.content.decode()
    settings.TAPEVIEW_HOST = "host-a"
    assert queue.claim() is None
    assert operator_client.post(f"/outbox/{queued.key}/cancel").status_code == 409


def test_a_request_whose_watcher_died_is_reported_failed_not_run_again(db, settings) -> None:
    settings.TAPEVIEW_HOST = "host-a"
    dead = Request.objects.create(
        host="host-a",
        action="handoff",
        actor="olga",
        state=Request.RUNNING,
        claimed_at=timezone.now() - timedelta(minutes=3),
        claimed_by="elsewhere 1",
    )
    assert queue.give_up_abandoned() == 1
    dead.refresh_from_db()
    assert dead.state == Request.FAILED and dead.status == 500 and "audit log" in dead.body["detail"]
    assert queue.claim() is None
