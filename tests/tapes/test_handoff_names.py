"""A handoff is refused where it would be read as something else (a name Bub keeps for its own
records) or read by no one (a tape Bub 0.2 named, which later Bub never opens): nothing is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).parents[1] / "fixtures" / "bub"


@pytest.fixture
def idle(settings):
    settings.TAPEVIEW_QUIET_SECONDS = 0


@pytest.mark.parametrize("name", ["memory/open", "memory/seal", "spill/x/chunk/1", "spill/abc/manifest"])
def test_a_name_bub_keeps_for_its_memory_or_spills_is_refused(writer, served, idle, name: str) -> None:
    tape = Tape.objects.get(label="telegram:-1001234567890")
    before = Path(tape.path).read_bytes()
    answer = writer.post(f"/api/tapes/{tape.key}/handoff", {"name": name})
    assert answer.status_code == 400
    assert "may not start with memory/ or spill/" in answer.json()["detail"]
    assert Path(tape.path).read_bytes() == before


def test_the_form_says_why_a_reserved_name_is_refused(operator_client, served, idle) -> None:
    tape = Tape.objects.get(label="telegram:-1001234567890")
    before = Path(tape.path).read_bytes()
    page = operator_client.post(f"/tapes/{tape.key}/handoff", {"name": "memory/open"})
    assert "may not start with memory/ or spill/" in page.content.decode()
    assert Path(tape.path).read_bytes() == before


def test_a_tape_bub_0_2_named_is_not_offered_a_handoff_and_says_why(
    writer, operator_client, settings, tmp_path, idle
) -> None:
    root = tmp_path / "tapes"
    root.mkdir()
    orphan = root / f"{'a' * 32}__bub%3A{'0b871d5e50e7c192'}.jsonl"
    shutil.copy(FIXTURES / "legacy_v0.2.3_session_timestamp.jsonl", orphan)
    shutil.copy(FIXTURES / "session_realistic.jsonl", root / "9d11f561157e98d3__0b871d5e50e7c192.jsonl")
    settings.TAPEVIEW_SOURCES = f"home=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    old = Tape.objects.get(rel=orphan.name)
    detail = writer.get(f"/api/tapes/{old.key}").json()
    assert detail["handoff"] is False and "never open this file again" in detail["handoff_refusal"]
    before = orphan.read_bytes()
    assert writer.post(f"/api/tapes/{old.key}/handoff", {"name": "phase/x"}).status_code == 400
    assert orphan.read_bytes() == before
    current = Tape.objects.get(rel="9d11f561157e98d3__0b871d5e50e7c192.jsonl")
    assert writer.get(f"/api/tapes/{current.key}").json()["handoff"] is True
    # The tape's page offers no "Hand off…", only why not; the current tape's page offers it.
    page = operator_client.get(f"/tapes/{old.key}/").content.decode()
    assert 'id="handoff-link"' not in page and "Why no handoff here?" in page
    assert 'id="handoff-link"' in operator_client.get(f"/tapes/{current.key}/").content.decode()
