"""The raw bytes of an entry: what the page's and the API's .../raw send."""

from __future__ import annotations

import pytest

from tapeview.sources import TapeNotFound
from tapeview.tapes import lookup, raw
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


def test_a_line_comes_whole_with_its_length(served) -> None:
    tape = lookup.find_tape(Tape.objects.get(name="fork_merged").key)
    entry = raw.read(tape, lookup.find_row(tape, 3))
    line = (served["samples"] / "fork_merged.jsonl").read_bytes().splitlines(keepends=True)[2]
    assert b"".join(entry.chunks) == line and entry.length == len(line)
    assert entry.content_type == "text/plain; charset=utf-8"


def test_a_file_deleted_after_the_lookup_fails_before_a_byte_is_sent(served) -> None:
    tape = lookup.find_tape(Tape.objects.get(name="fork_merged").key)
    row = lookup.find_row(tape, 3)
    (served["samples"] / "fork_merged.jsonl").unlink()
    with pytest.raises(TapeNotFound):
        raw.read(tape, row)
