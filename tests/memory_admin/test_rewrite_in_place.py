"""A memory file its agent rewrites in place (truncate, then write) is never served half-written:
a read that falls between the two is read again, and one that never settles says so."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore

pytestmark = pytest.mark.django_db

VERSIONS = ("# User\n\nPrefers short answers.\n" * 40, "# User\n\nWorks from Lisbon, in UTC+0.\n" * 40)
READS = 100


def rewrite_in_place(path: Path, stop, gap: float) -> None:
    """nanobot's write_text, again and again: open for writing (the file is empty now), then write."""
    n = 0
    while not stop.is_set():
        with path.open("r+b") as f:
            f.truncate(0)
            time.sleep(gap)  # the agent's own time between the truncate and the write
            f.write(VERSIONS[n % 2].encode())
        n += 1
        time.sleep(0.03)


@pytest.mark.parametrize("gap", [0.0005, 0.005])
def test_a_read_racing_an_in_place_rewrite_gets_a_whole_version_or_is_told_so(
    reader, viewer_client, memory_sources, gap: float
) -> None:
    store = MemoryStore.objects.get(kind="nanobot.file", title="USER.md")
    path = Path(store.path)
    path.write_text(VERSIONS[1])
    fork = multiprocessing.get_context("fork")  # an agent of its own: no lock shared with the reads
    stop = fork.Event()
    writer = fork.Process(target=rewrite_in_place, args=(path, stop, gap))
    writer.start()
    answers, pages = [], []
    try:
        for n in range(READS):
            answers.append(reader.get(f"/api/memory/{store.key}"))
            if n % 4 == 0:
                pages.append(viewer_client.get(f"/memory/{store.key}/"))
    finally:
        stop.set()
        writer.join()
    whole = [r for r in answers if r.status_code == 200]
    told = [r for r in answers if r.status_code == 503]
    assert len(whole) + len(told) == READS, {r.status_code for r in answers}
    assert {r.json()["content"] for r in whole} <= set(VERSIONS)
    assert len(whole) > READS / 4, len(told)
    for r in told:
        assert (
            r.json()["detail"] == "USER.md changed while it was read (its agent is rewriting it): try again"
        )
        assert r["Retry-After"] == "1"
    for page in pages:
        text = page.content.decode()
        if page.status_code == 503:
            assert "USER.md changed while it was read" in text
        else:
            assert page.status_code == 200 and (
                "Prefers short answers." in text or "Works from Lisbon" in text
            )
