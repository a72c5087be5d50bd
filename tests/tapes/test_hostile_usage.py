"""A run's usage that is no sane count (negative, a string, 10**30, a float) is not counted: the tape
reads "–" (unknown) as one with no usage does, never 0 or a negative figure; a sane one still counts."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from tapeview.tapes import blocklane, discovery
from tapeview.tapes.models import Tape

from .test_budget import line, write_tape
from .test_tape_page_words import tokens_row

pytestmark = pytest.mark.django_db

UNKNOWN = "– last prompt –, cache hit –"
INSANE = {
    "negative": {"prompt_tokens": -100, "completion_tokens": -5, "total_tokens": -105},
    "strings": {"prompt_tokens": "100", "completion_tokens": "5", "total_tokens": "105"},
    "past_any_count": {"prompt_tokens": 10**30, "completion_tokens": 5, "total_tokens": 10**30},
    "floats_and_bools": {"prompt_tokens": 1.5e308, "total_tokens": True},
    "empty": {},
}


def tape_with(usage: dict) -> list[dict]:
    return [
        line(1, "anchor", {"name": "session/start", "state": {}}),
        line(2, "message", {"role": "user", "content": "hi"}),
        line(3, "event", {"name": "run", "data": {"status": "ok", "model": "openai:gpt-4o", "usage": usage}}),
    ]


@pytest.mark.parametrize("usage", INSANE.values(), ids=INSANE.keys())
@pytest.mark.parametrize("lane", ["compiled", "python"])
def test_usage_that_is_no_sane_count_reads_unknown(
    viewer_client, served, monkeypatch, usage: dict, lane: str
) -> None:
    if lane == "python":  # the index read without the compiled lane (tapes/_lane.c)
        monkeypatch.setattr(blocklane, "native", None)
    k = write_tape(served["samples"], "oddusage", tape_with(usage))
    page = viewer_client.get(f"/tapes/{k}/").content.decode()
    assert tokens_row(page) == UNKNOWN
    assert Tape.objects.get(key=k).tokens is None


def test_a_sane_usage_beside_an_insane_field_still_counts(viewer_client, served) -> None:
    usage = {"prompt_tokens": 4000, "completion_tokens": "x", "total_tokens": 4100,
             "prompt_tokens_details": {"cached_tokens": -7}}  # fmt: skip
    k = write_tape(served["samples"], "oddusage", tape_with(usage))
    page = viewer_client.get(f"/tapes/{k}/").content.decode()
    assert tokens_row(page) == "4,100 last prompt 4,000, cache hit 0%"


def test_the_migration_reads_a_tape_indexed_with_negative_usage_again(viewer_client, served) -> None:
    k = write_tape(served["samples"], "oddusage", tape_with({"prompt_tokens": 4000, "total_tokens": 4100}))
    Tape.objects.filter(key=k).update(tokens=-105, last_prompt_tokens=-100, context_tokens=-100)  # as before
    migration = importlib.import_module("tapeview.tapes.migrations.0020_reread_usage_and_big_lines")
    migration.reread_usage_and_big_lines(apps, None)
    assert Tape.objects.get(key=k).indexed_at is None
    assert Tape.objects.filter(name="session_realistic").exclude(indexed_at=None).exists()
    discovery.sync()
    assert (
        tokens_row(viewer_client.get(f"/tapes/{k}/").content.decode())
        == "4,100 last prompt 4,000, cache hit 0%"
    )
