"""A fleet's file copies follow the index in a pass of their own (tapes.filecopy.keep_tapes): the
index never waits for them, and until the pass has run a web tier on another host says which part
of a tape is not copied yet, never a 500 and never bytes that are not the entry's."""

from __future__ import annotations

import html
import io
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from django.core.management import call_command
from django.db import OperationalError
from django.test import Client, override_settings
from django.utils import timezone

from tapeview.sources import SourceSpec
from tapeview.tapes import discovery, export, filecopy, watcher
from tapeview.tapes.models import FileCopy, Indexer, Tape
from tests.conftest import Api
from tests.tapes.test_filecopy import copied_bytes
from tests.tapes.test_watcher import bub_line

pytestmark = pytest.mark.django_db

NOT_YET = "not copied from host agent yet"


def anchor_line(n: int, name: str) -> bytes:
    entry = {"id": n, "kind": "anchor", "payload": {"name": name, "state": {"owner": "human"}}, "meta": {}}
    return orjson.dumps({**entry, "date": "2026-01-01T00:00:00+00:00"}) + b"\n"


def a_tape(tmp_path: Path, lines: int) -> tuple[SourceSpec, Path]:
    folder = tmp_path / "tapes"
    folder.mkdir()
    path = folder / "a__b.jsonl"
    path.write_bytes(
        anchor_line(1, "session/start") + b"".join(bub_line(n, f"first {n}") for n in range(2, lines + 1))
    )
    return SourceSpec("work", "bub", folder), path


def append(path: Path, first: int, last: int) -> None:
    with path.open("ab") as f:
        f.write(b"".join(bub_line(n, f"later {n}") for n in range(first, last + 1)))


def index_only(spec: SourceSpec) -> None:
    """The agent host's index (discovery.sync, as the bench times it): no copy on its path."""
    with override_settings(TAPEVIEW_HOST="agent", TAPEVIEW_COPY_FILES=True):
        discovery.sync([spec])


def copy_pass() -> None:
    with override_settings(TAPEVIEW_HOST="agent", TAPEVIEW_COPY_FILES=True):
        filecopy.keep_tapes(Tape.objects.filter(host="agent"))


@pytest.fixture
def web(settings) -> None:
    """This process is the web tier, host `web`: it reads host `agent`'s files from their copies."""
    settings.TAPEVIEW_HOST = "web"
    settings.TAPEVIEW_WEB_INDEXES = False
    settings.TAPEVIEW_SOURCES = ""


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_the_index_leaves_the_copy_behind_and_the_copy_pass_brings_it_up(tmp_path: Path) -> None:
    spec, path = a_tape(tmp_path, 5)
    index_only(spec)
    assert Tape.objects.get().entries == 5 and not FileCopy.objects.exists()
    copy_pass()
    assert copied_bytes(path) == path.read_bytes()
    append(path, 6, 12)
    index_only(spec)
    assert Tape.objects.get().entries == 12
    behind = copied_bytes(path)
    assert len(behind) < path.stat().st_size and path.read_bytes().startswith(behind)
    copy_pass()
    assert copied_bytes(path) == path.read_bytes()


def test_a_web_tier_says_what_is_not_copied_yet_then_shows_it_after_the_pass(
    tmp_path: Path, web, viewer_client, read_token
) -> None:
    spec, path = a_tape(tmp_path, 5)
    index_only(spec)
    copy_pass()
    append(path, 6, 9)
    index_only(spec)  # entries 6-9 indexed on host agent, their bytes not copied yet
    tape = Tape.objects.get()
    api, lines = Api(Client(), read_token), lines_of(path)
    lag = f"the copy is {len(b''.join(lines[5:])):,} bytes behind"

    first = api.get(f"/api/tapes/{tape.key}/entries/2/raw")  # a part that is copied reads as ever
    assert first.status_code == 200 and b"".join(first.streaming_content) == lines[1]
    for url in (
        f"/api/tapes/{tape.key}/entries/8/raw",
        f"/api/tapes/{tape.key}/entries?limit=50",
        f"/api/tapes/{tape.key}/export?format=jsonl",
    ):
        r = Api(Client(), read_token).get(url)
        # On its way, not gone: never a 500, nor a line cut short, nor an export cut short.
        assert (r.status_code, r["Retry-After"], r.json()["retry_after"]) == (503, "2", 2), url
        assert NOT_YET in r.json()["detail"] and lag in r.json()["detail"], url
    for url in (
        f"/tapes/{tape.key}/?end=1",
        f"/tapes/{tape.key}/entries/8/",
        f"/tapes/{tape.key}/context",
        f"/tapes/{tape.key}/export.jsonl",
    ):
        page = viewer_client.get(url)
        assert (page.status_code, page["Retry-After"]) == (503, "2"), url
        text = html.unescape(page.content.decode())
        assert "Not here yet" in text and NOT_YET in text and "try again in a few seconds" in text, url
    # The live end of the timeline asks again every second: not a 200 with nothing new meanwhile.
    assert viewer_client.get(f"/tapes/{tape.key}/tail", {"after": 5}).status_code == 503

    copy_pass()
    raw = api.get(f"/api/tapes/{tape.key}/entries/8/raw")
    assert raw.status_code == 200 and b"".join(raw.streaming_content) == lines[7]
    export = api.get(f"/api/tapes/{tape.key}/export", format="jsonl")
    assert export.status_code == 200 and b"".join(export.streaming_content) == path.read_bytes()
    page = viewer_client.get(f"/tapes/{tape.key}/", {"end": 1})
    assert page.status_code == 200 and "later 9" in html.unescape(page.content.decode())
    assert viewer_client.get(f"/tapes/{tape.key}/tail", {"after": 5}).status_code == 200


def test_while_the_hosts_watcher_is_gone_the_503_names_the_host_and_how_long(
    tmp_path: Path, web, viewer_client, read_token
) -> None:
    spec, path = a_tape(tmp_path, 5)
    index_only(spec)
    copy_pass()
    append(path, 6, 9)
    index_only(spec)
    tape = Tape.objects.get()
    five_minutes_ago = timezone.now() - timedelta(minutes=5)
    Indexer.objects.create(host="agent", started_at=five_minutes_ago, beat_at=five_minutes_ago)
    r = Api(Client(), read_token).get(f"/api/tapes/{tape.key}/entries/8/raw")
    assert (r.status_code, r["Retry-After"]) == (503, "30")
    assert "host agent's `tapeview index --watch` has not been seen for 5 minutes" in r.json()["detail"]
    assert "try again in a few seconds" not in r.json()["detail"]
    Indexer.objects.filter(host="agent").update(beat_at=None)  # stopped with Ctrl-C
    page = html.unescape(viewer_client.get(f"/tapes/{tape.key}/entries/8/").content.decode())
    assert "host agent's `tapeview index --watch` was stopped: the copy waits for it to run again" in page


# Every read of one tape the API offers (GET /api/openapi.json), with what its path needs.
TAPE_READS = (
    "/api/tapes/{tape_id}",
    "/api/tapes/{tape_id}/entries",
    "/api/tapes/{tape_id}/entries/{pos}",
    "/api/tapes/{tape_id}/entries/{pos}/raw",
    "/api/tapes/{tape_id}/anchors",
    "/api/tapes/{tape_id}/context",
    "/api/tapes/{tape_id}/phases",
    "/api/tapes/{tape_id}/lineage",
    "/api/tapes/{tape_id}/budget",
    "/api/tapes/{tape_id}/export",
    "/api/tapes/{tape_id}/reviews/export",
    "/api/tapes/{tape_id}/turns",
)


def test_the_api_documents_the_503_of_every_read_that_can_answer_it(tmp_path: Path, web, read_token) -> None:
    """A client generated from the OpenAPI document knows the 503 and its `retry_after` wherever a
    tape read can answer it, and nowhere else."""
    spec, path = a_tape(tmp_path, 5)
    index_only(spec)
    copy_pass()
    append(path, 6, 9)
    index_only(spec)
    api = Api(Client(), read_token)
    document = api.get("/api/openapi.json").json()
    reads = {
        p for p, ops in document["paths"].items() if p.startswith("/api/tapes/{tape_id}") and "get" in ops
    }
    assert reads == set(TAPE_READS)  # a new read of a tape: add it above
    key = Tape.objects.get().key
    answered = {}
    for route in TAPE_READS:
        r = api.get(route.format(tape_id=key, pos=8))
        assert r.status_code in (200, 503), (route, r.status_code)
        answered[route] = r.status_code
    for route, status in answered.items():
        documented = document["paths"][route]["get"]["responses"]
        assert ("503" in documented) == (status == 503), route
    refused = [route for route, status in answered.items() if status == 503]
    assert "/api/tapes/{tape_id}/entries/{pos}/raw" in refused  # (the test reaches the copy at all)
    shape = document["paths"][refused[0]]["get"]["responses"]["503"]["content"]["application/json"]["schema"]
    schema = document["components"]["schemas"][shape["$ref"].rsplit("/", 1)[1]]
    assert set(schema["required"]) == {"detail", "retry_after"}


@pytest.mark.parametrize("fmt", ["jsonl", "md"])
def test_an_export_whose_end_is_not_copied_is_refused_before_it_starts(
    tmp_path: Path, web, read_token, monkeypatch, fmt: str
) -> None:
    monkeypatch.setattr(export, "CHUNK", 100)  # streamed a few lines at a time: the first are copied
    monkeypatch.setattr(export, "BATCH", 5)  # (Markdown: a few entries at a time)
    spec, path = a_tape(tmp_path, 20)
    index_only(spec)
    copy_pass()
    append(path, 21, 22)
    index_only(spec)
    r = Api(Client(), read_token).get(f"/api/tapes/{Tape.objects.get().key}/export", format=fmt)
    assert r.status_code == 503 and NOT_YET in r.json()["detail"]  # not a download cut off halfway


def test_a_copy_pass_broken_off_leaves_a_copy_the_next_one_completes(
    tmp_path: Path, web, read_token, monkeypatch
) -> None:
    monkeypatch.setattr(filecopy, "BLOCK", 300)
    monkeypatch.setattr(filecopy, "STEP", 1000)  # a step ends inside a line
    spec, path = a_tape(tmp_path, 20)
    index_only(spec)
    real_append, steps = filecopy._append, []

    def dies_at_the_second_step(copy, data):
        steps.append(len(data))
        if len(steps) > 1:
            raise OperationalError("the database went away")
        real_append(copy, data)

    monkeypatch.setattr(filecopy, "_append", dies_at_the_second_step)
    with pytest.raises(OperationalError):
        copy_pass()
    kept = copied_bytes(path)  # whole blocks, no gap: the first step, committed
    assert len(kept) == 1000 and path.read_bytes().startswith(kept)
    api, lines = Api(Client(), read_token), lines_of(path)
    tape, ends = Tape.objects.get(), [sum(len(line) for line in lines[:n]) for n in range(1, len(lines) + 1)]
    whole = sum(1 for end in ends if end <= 1000)  # the entries whose every byte is copied
    r = api.get(f"/api/tapes/{tape.key}/entries/{whole}/raw")
    assert r.status_code == 200 and b"".join(r.streaming_content) == lines[whole - 1]
    cut = api.get(f"/api/tapes/{tape.key}/entries/{whole + 1}/raw")  # its first bytes copied, not all
    assert cut.status_code == 503 and NOT_YET in cut.json()["detail"]

    monkeypatch.setattr(filecopy, "_append", real_append)
    copy_pass()
    assert copied_bytes(path) == path.read_bytes()
    r = api.get(f"/api/tapes/{tape.key}/entries/{whole + 1}/raw")
    assert r.status_code == 200 and b"".join(r.streaming_content) == lines[whole]


def test_tapeview_index_copies_after_its_index(tmp_path: Path, settings) -> None:
    spec, path = a_tape(tmp_path, 5)
    settings.TAPEVIEW_COPY_FILES = True
    call_command("index", f"work=bub:{spec.path}", stdout=io.StringIO())
    assert Tape.objects.get().entries == 5
    assert copied_bytes(path, settings.TAPEVIEW_HOST) == path.read_bytes()


def eventually(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if check():
                return
        except OperationalError:  # SQLite's in-memory test database, shared with the watcher's thread
            pass
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


@pytest.mark.django_db(transaction=True)
def test_the_watcher_copies_what_it_indexed_without_anyone_asking(tmp_path: Path, settings) -> None:
    spec, path = a_tape(tmp_path, 5)
    settings.TAPEVIEW_COPY_FILES = True
    host = settings.TAPEVIEW_HOST

    def copied() -> bool:
        copy = FileCopy.objects.filter(digest=filecopy.digest(host, str(path))).first()
        return copy is not None and copied_bytes(path, host) == path.read_bytes()

    thread, stop = watcher.start_in_background([spec], polling=True)
    try:
        eventually(copied, 20, "the first pass's copy")
        append(path, 6, 9)
        eventually(lambda: Tape.objects.get().entries == 9 and copied(), 20, "the append's copy")
    finally:
        stop.set()
        thread.join(30)
    assert not thread.is_alive()
