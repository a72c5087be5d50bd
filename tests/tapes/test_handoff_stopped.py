"""A tape whose agent stopped mid-turn is not busy forever: an operator may confirm a handoff."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tapeview.accounts.models import AuditEvent
from tapeview.sources import bub
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db
START = {
    "id": 1,
    "kind": "anchor",
    "payload": {"name": "session/start", "state": {}},
    "meta": {},
    "date": "2026-11-20T10:00:00+00:00",
}
ASKED = {
    "id": 2,
    "kind": "message",
    "payload": {"role": "user", "content": "deploy it"},
    "meta": {},
    "date": "2026-11-20T10:00:01+00:00",
}


@pytest.fixture
def stopped_tape(settings, tmp_path: Path) -> Tape:
    """The agent crashed after the user's message: the turn never ended, an hour ago."""
    path = tmp_path / "ws__crashed.jsonl"
    path.write_text(json.dumps(START) + "\n" + json.dumps(ASKED) + "\n")
    hour_ago = time.time() - 3600
    os.utime(path, (hour_ago, hour_ago))
    settings.TAPEVIEW_SOURCES = f"home=bub:{tmp_path}"
    settings.TAPEVIEW_QUIET_SECONDS = 0
    settings.TAPEVIEW_STOPPED_SECONDS = 600
    discovery.sync()
    return Tape.objects.get()


def test_the_page_says_the_agent_looks_stopped_and_asks_for_confirmation(
    operator_client, stopped_tape
) -> None:
    page = operator_client.get(f"/tapes/{stopped_tape.key}/handoff").content.decode()
    assert "The agent looks stopped" in page and 'name="confirm_stopped"' in page


def test_without_confirmation_nothing_is_written(operator_client, stopped_tape) -> None:
    before = Path(stopped_tape.path).read_bytes()
    answer = operator_client.post(f"/tapes/{stopped_tape.key}/handoff", {"name": "phase/recover"})
    assert answer.status_code == 409 and "Nothing was written" in answer.content.decode()
    assert Path(stopped_tape.path).read_bytes() == before and not AuditEvent.objects.exists()


def test_a_confirmed_handoff_is_written_and_audited_as_confirmed(operator_client, stopped_tape) -> None:
    answer = operator_client.post(
        f"/tapes/{stopped_tape.key}/handoff", {"name": "phase/recover", "confirm_stopped": "on"}
    )
    assert answer.status_code == 302
    anchor, event = list(bub.scan(Path(stopped_tape.path)))[-2:]
    assert (anchor.name, anchor.id, event.name, event.id) == ("phase/recover", 3, "handoff", 4)
    assert AuditEvent.objects.get().detail["confirmed_stopped"] is True


def test_the_api_says_stopped_and_writes_when_confirmed(writer, stopped_tape) -> None:
    refused = writer.post(f"/api/tapes/{stopped_tape.key}/handoff", {"name": "phase/recover"})
    assert refused.status_code == 409 and refused.json()["stopped"] is True
    assert "confirm_stopped=true" in refused.json()["detail"]
    written = writer.post(
        f"/api/tapes/{stopped_tape.key}/handoff", {"name": "phase/recover", "confirm_stopped": True}
    )
    assert written.status_code == 201 and written.json()["ids"] == [3, 4]


def test_a_state_cannot_name_another_owner(writer, stopped_tape) -> None:
    body = {"name": "phase/x", "state": {"owner": "mallory", "next": "ship"}, "confirm_stopped": True}
    assert writer.post(f"/api/tapes/{stopped_tape.key}/handoff", body).status_code == 201
    anchor = list(bub.scan(Path(stopped_tape.path)))[-2]
    assert anchor.payload["state"] == {"next": "ship", "owner": "token:writer"}


def test_a_turn_that_failed_at_the_model_call_takes_a_handoff(operator_client, served, settings) -> None:
    settings.TAPEVIEW_QUIET_SECONDS = 0
    tape = Tape.objects.get(source="samples", name="session_realistic")  # ends with `run` status error
    answer = operator_client.post(f"/tapes/{tape.key}/handoff", {"name": "phase/after-error"})
    assert answer.status_code == 302
