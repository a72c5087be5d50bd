"""Search narrowed to what operators reviewed: by the label or the score of an entry's current review."""

from __future__ import annotations

import re

import pytest

from tapeview.search import engine
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def realistic(served) -> Tape:
    return Tape.objects.get(source="samples", name="session_realistic")


def review(writer, tape: Tape, pos: int, **fields) -> dict:
    answer = writer.post(f"/api/tapes/{tape.key}/reviews", {"pos": pos, **fields})
    assert answer.status_code == 201, answer.content
    return answer.json()


def test_search_keeps_the_entries_reviewed_with_a_label(writer, reader, realistic) -> None:
    everything = {(h.tape_key, h.pos) for h in engine.search("the")}
    assert len(everything) > 1  # without the filter, many entries match
    chosen = min(h.pos for h in engine.search("fs_read", tape_key=realistic.key))
    review(writer, realistic, chosen, score=2, labels=["wrong-tool"])

    assert len(reader.get("/api/search", q="the", label="wrong-tool").json()["items"]) <= 1
    hits = reader.get("/api/search", q="fs_read", label="wrong-tool").json()["items"]
    assert [(h["tape_id"], h["pos"]) for h in hits] == [(realistic.key, chosen)]
    assert [h["pos"] for h in reader.get("/api/search", q="fs_read", score=2).json()["items"]] == [chosen]
    assert reader.get("/api/search", q="fs_read", score=5).json()["items"] == []


def test_a_superseded_review_no_longer_counts(writer, reader, realistic) -> None:
    pos = min(h.pos for h in engine.search("fs_read", tape_key=realistic.key))
    first = review(writer, realistic, pos, score=1, labels=["slow"])
    review(writer, realistic, pos, score=4, labels=["fine"], supersedes=first["id"])

    assert reader.get("/api/search", q="fs_read", label="slow").json()["items"] == []
    assert [h["pos"] for h in reader.get("/api/search", q="fs_read", label="fine").json()["items"]] == [pos]


def test_the_search_page_filters_by_review_label(viewer_client, writer, realistic) -> None:
    pos = min(h.pos for h in engine.search("fs_read", tape_key=realistic.key))
    review(writer, realistic, pos, score=3, labels=["checked"])
    page = viewer_client.get("/search/", {"q": "fs_read", "review_label": "checked"}).content.decode()
    assert set(re.findall(r"\?at=(\d+)#e", page)) == {str(pos)}


def test_the_session_index_narrows_to_tapes_reviewed_with_a_label_or_score(
    viewer_client, writer, realistic
) -> None:
    review(writer, realistic, 20, score=5, labels=["exemplary"])
    listed = viewer_client.get("/", {"review_label": "exemplary"}).content.decode()
    assert realistic.label in listed and "1 of" in listed
    assert "1 of" in viewer_client.get("/", {"review_score": "5"}).content.decode()
    assert "0 of" in viewer_client.get("/", {"review_label": "nobody-used-this"}).content.decode()
    assert viewer_client.get("/", {"review_score": "9"}).status_code == 200  # a bad value is not a 500
