"""Handoffs from the browser: the next context first, then one guest write, or a clear refusal."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tapeview.accounts.models import AuditEvent
from tapeview.sources import bub
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def idle(settings):
    settings.TAPEVIEW_QUIET_SECONDS = 0


def tape(label: str) -> Tape:
    return Tape.objects.get(label=label)


def test_the_form_shows_the_next_context_first(operator_client, served, idle) -> None:
    page = operator_client.get(f"/tapes/{tape('telegram:-1001234567890').key}/handoff").content.decode()
    assert (
        "What the agent&#x27;s next context would be" in page
        or "What the agent's next context would be" in page
    )
    assert "2 messages" in page and "<strong>0 messages.</strong>" in page


def test_a_handoff_is_the_anchor_and_event_in_bubs_format_with_ids_continuing(
    operator_client, served, idle
) -> None:
    t = tape("telegram:-1001234567890")
    path = Path(t.path)
    last_id = json.loads(path.read_text().splitlines()[-1])["id"]
    r = operator_client.post(
        f"/tapes/{t.key}/handoff", {"name": "phase/review", "summary": "Reviewed the deploy."}
    )
    assert r.status_code == 302 and r["Location"].endswith("?end=1")
    anchor, event = list(bub.scan(path))[-2:]
    assert (anchor.kind, anchor.name, anchor.id) == ("anchor", "phase/review", last_id + 1)
    assert anchor.payload["state"] == {"owner": "olga", "summary": "Reviewed the deploy."}
    assert (event.name, event.id, event.payload["data"]["name"]) == ("handoff", last_id + 2, "phase/review")
    assert list(json.loads(path.read_text().splitlines()[-1])) == ["id", "kind", "payload", "meta", "date"]
    assert AuditEvent.objects.get().action == "handoff"
    page = operator_client.get(r["Location"]).content.decode()
    assert "⚓ phase/review" in page


def test_a_tape_mid_turn_gets_busy_retry_and_nothing_is_written(operator_client, served, settings) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 3600
    t = tape("telegram:-1001234567890")
    os.utime(t.path, (time.time(), time.time()))
    before = Path(t.path).read_bytes()
    r = operator_client.post(f"/tapes/{t.key}/handoff", {"name": "phase/x"})
    assert r.status_code == 409 and r["Retry-After"] and "Nothing was written" in r.content.decode()
    assert Path(t.path).read_bytes() == before


def test_viewers_cannot_hand_off(viewer_client, served) -> None:
    t = tape("telegram:-1001234567890")
    assert viewer_client.post(f"/tapes/{t.key}/handoff", {"name": "x"}).status_code == 403
    assert "Hand off" not in viewer_client.get(f"/tapes/{t.key}/").content.decode()


def test_a_nanobot_session_is_not_offered_a_handoff_and_the_page_says_why(
    operator_client, settings, tmp_path
) -> None:
    import shutil

    from tapeview.tapes import discovery

    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "nanobot", tmp_path / "nb")
    settings.TAPEVIEW_SOURCES = f"nb=nanobot:{tmp_path / 'nb' / 'current'}"
    discovery.sync()
    t = Tape.objects.get(label="telegram:8123456789")
    page = operator_client.get(f"/tapes/{t.key}/handoff").content.decode()
    assert "nanobot sessions take no handoff" in page and "Write handoff" not in page
    before = Path(t.path).read_bytes()
    assert operator_client.post(f"/tapes/{t.key}/handoff", {"name": "x"}).status_code == 400
    assert Path(t.path).read_bytes() == before
