"""Hostile input: each gets a clear answer, never a 500 or a stopped index."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.mark.django_db
def test_a_file_name_that_is_not_utf8_is_refused_and_the_other_tapes_are_indexed(
    viewer_client, settings, tmp_path: Path
) -> None:
    root = tmp_path / "tapes"
    shutil.copytree(FIXTURES / "bub" / "tapes_dir", root)
    good = next(root.glob("*__*.jsonl"))
    shutil.copy(good, root / os.fsdecode(b"ws__caf\xe9.jsonl"))  # a Latin-1 name
    settings.TAPEVIEW_SOURCES = f"home=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0

    report = discovery.sync()

    assert "home: ws__caf\\xe9.jsonl: a name that is not UTF-8: not read" in report.problems
    assert Tape.objects.get(name=good.stem).entries > 0
    sources = viewer_client.get("/sources/")
    assert sources.status_code == 200
    assert "ws__caf\\xe9.jsonl: a name that is not UTF-8: not read" in sources.content.decode()


@pytest.fixture
def server_log() -> Iterator[io.StringIO]:
    """What the server's console handler writes (settings.LOGGING), as `tapeview serve` shows it."""
    [console] = [h for h in logging.getLogger().handlers if type(h) is logging.StreamHandler]
    written = io.StringIO()
    before = console.setStream(written)
    yield written
    console.setStream(before)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("send", "status", "said"),
    [
        (lambda c: c.get("/", HTTP_HOST="evil.example"), 400, "400 GET / by"),
        (
            lambda c: c.post("/login/", "a=" + "x" * 3000, content_type="application/x-www-form-urlencoded"),
            413,
            "413 POST",
        ),
        (lambda c: c.get("/search/?" + "&".join(f"a{i}=1" for i in range(2000))), 400, "400 GET /search/ by"),
    ],
    ids=["foreign-host", "body-too-large", "redirect-too-long"],
)
def test_a_suspicious_request_is_refused_and_one_line_in_the_log_without_a_traceback(
    client, settings, server_log, send, status: int, said: str
) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    assert send(client).status_code == status
    lines = server_log.getvalue().splitlines()
    assert "Traceback (most recent call last):" not in lines
    assert any(line.startswith(said) for line in lines), lines


@pytest.mark.django_db
@pytest.mark.parametrize("kind", [["message"], {"a": 1}], ids=["list", "object"])
def test_a_line_whose_kind_is_not_a_string_is_unreadable_and_the_tape_is_indexed(
    viewer_client, settings, tmp_path: Path, kind: object
) -> None:
    root = tmp_path / "tapes"
    root.mkdir()
    lines = (
        (FIXTURES / "bub" / "tapes_dir" / "9d11f561157e98d3__0b871d5e50e7c192.jsonl").read_text().splitlines()
    )
    odd = json.dumps({"id": 3, "kind": kind, "payload": {}, "meta": {}, "date": "2026-11-22T01:37:39+00:00"})
    (root / "ws__odd.jsonl").write_text("\n".join([*lines[:2], odd, *lines[2:]]) + "\n")
    settings.TAPEVIEW_SOURCES = f"home=bub:{root}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0

    discovery.sync()

    tape = Tape.objects.get(name="ws__odd")
    assert tape.entries == len(lines) and tape.unreadable == 1
    assert viewer_client.get(f"/tapes/{tape.key}/").status_code == 200


@pytest.mark.django_db
def test_a_write_settling_an_intent_its_writer_withdraws_meanwhile_is_saved_not_500(
    operator_client, memory_sources, monkeypatch
) -> None:
    from memory_admin import writes
    from memory_admin.models import MemoryStore
    from tapeview.accounts import audit
    from tapeview.accounts.models import AuditEvent

    zone = MemoryStore.objects.filter(kind="bub.zone").first()
    # Another host's writer, pending for longer than any write takes, expecting the version the zone
    # has: taken for gone, the next write settles its row...
    other = audit.record(
        audit.Actor("ops", None),
        "zone.clear",
        subject=f"store:{zone.key}",
        target="t",
        after="8",
        outcome=audit.PENDING,
    )
    AuditEvent.objects.filter(pk=other.pk).update(
        writer="another-host 1", at=timezone.now() - audit.ABANDONED_AFTER - timedelta(minutes=1)
    )
    on_disk = writes._on_disk

    def withdrawn_meanwhile(store):  # ...while that slow writer, refused at last, takes it back
        AuditEvent.objects.filter(pk=other.pk).delete()
        return on_disk(store)

    monkeypatch.setattr(writes, "_on_disk", withdrawn_meanwhile)
    answer = operator_client.post(
        f"/memory/{zone.key}/zone", {"action": "long_term", "text": "Likes tea.", "base_version": "8"}
    )

    assert answer.status_code == 302
    assert "Likes tea." in operator_client.get(f"/memory/{zone.key}/").content.decode()
    assert list(AuditEvent.objects.values_list("action", "outcome")) == [("zone.long_term", audit.WRITTEN)]
