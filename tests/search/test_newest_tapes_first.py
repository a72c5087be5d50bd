"""A cold index numbers new tapes oldest file first, as a watcher running all along would have: a
word found in more entries than search ranks (the newest matches by id) is found in the tapes the
agents wrote last, whatever their files are called."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tapeview.search import backends, catchup, engine
from tapeview.sources import parse_sources
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db

ENTRIES = 30  # each tape's; search ranks 40 here: the newest tape's 30, and 10 of the next one's


def write_tape(folder: Path, name: str, written: datetime) -> None:
    lines = [
        json.dumps(
            {
                "id": n,
                "kind": "message",
                "payload": {"role": "user", "content": f"common word, entry {n} of {name}"},
                "meta": {},
                "date": written.isoformat(),
            }
        )
        for n in range(1, ENTRIES + 1)
    ]
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (written.timestamp(), written.timestamp()))


def test_a_common_word_is_found_in_the_tapes_written_last(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(backends, "CANDIDATES", 40)
    folder = tmp_path / "bub"
    folder.mkdir()
    # Named against the order they were written in: a listing by name meets the oldest first.
    for name, month in [("aaaa__newest", 11), ("bbbb__middle", 6), ("cccc__oldest", 1)]:
        write_tape(folder, name, datetime(2026, month, 1, tzinfo=UTC))
    discovery.sync(parse_sources([f"agents=bub:{folder}"]))
    catchup.catch_up()

    hits = engine.search("common", limit=50)

    names = {Tape.objects.get(key=hit.tape_key).name for hit in hits}
    assert names == {"aaaa__newest", "bbbb__middle"}
    ids = dict(Tape.objects.values_list("name", "pk"))
    assert ids["cccc__oldest"] < ids["bbbb__middle"] < ids["aaaa__newest"]
