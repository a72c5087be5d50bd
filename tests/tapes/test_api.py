"""The tapes API: sources, the tape list and its pages, one tape."""

from __future__ import annotations

import json

import pytest

from tapeview.tapes.api import cursor
from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


def key(name: str) -> str:
    return Tape.objects.get(name=name).key


def test_sources_lists_each_source_with_its_health_but_not_its_folder(reader, served) -> None:
    body = reader.get("/api/sources").json()
    assert [s["label"] for s in body["items"]] == ["home", "samples"] and body["next_cursor"] is None
    home = body["items"][0]
    assert (home["kind"], home["ok"], home["tapes"]) == ("bub", True, 6)
    assert str(served["home"]) not in json.dumps(body)


def test_tapes_have_the_statistics_of_the_session_index(reader, served) -> None:
    items = reader.get("/api/tapes", source="home", q="cli").json()["items"]
    assert len(items) == 1
    tape = items[0]
    assert set(tape) >= {"id", "source", "label", "entries", "anchors", "last_anchor", "first_at", "last_at"}
    assert (tape["label"], tape["entries"], tape["anchors"]) == ("cli:local", 97, 4)
    assert tape["last_anchor"] == "auto_handoff/context_overflow" and tape["tokens"] == 38856
    assert tape["size_bytes"] > 0 and tape["errors"] == 3 and tape["first_at"] <= tape["last_at"]
    assert "path" not in tape


@pytest.mark.parametrize("sort", ["-last", "label", "-tokens", "first", "last_anchor", "-size"])
def test_next_cursor_walks_every_tape_once_in_order(reader, served, sort) -> None:
    everything = reader.get("/api/tapes", sort=sort, limit=500).json()
    assert everything["next_cursor"] is None
    seen, cursor = [], None
    while True:
        params = {"sort": sort, "limit": 3, **({"cursor": cursor} if cursor else {})}
        page = reader.get("/api/tapes", **params).json()
        seen += [t["id"] for t in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert len(page["items"]) == 3
    assert seen == [t["id"] for t in everything["items"]] and len(set(seen)) == len(seen) > 3


def test_the_tape_list_is_sorted_by_the_asked_column(reader, served) -> None:
    tokens = [t["tokens"] for t in reader.get("/api/tapes", sort="-tokens").json()["items"]]
    known = [t for t in tokens if t is not None]
    # Tapes whose agent recorded no usage (null) come last either way, as tapes without times do.
    assert tokens == sorted(known, reverse=True) + [None] * (len(tokens) - len(known)) and None in tokens


def test_the_tape_list_filters_by_kind_and_by_errors_as_the_index_page_does(reader, served) -> None:
    everything = reader.get("/api/tapes", limit=500).json()["items"]
    with_errors = reader.get("/api/tapes", errors="true", limit=500).json()["items"]
    assert {t["id"] for t in with_errors} == {t["id"] for t in everything if t["errors"]} != set()
    assert len(with_errors) < len(everything)
    assert [t["id"] for t in reader.get("/api/tapes", kind="bub", limit=500).json()["items"]] == [
        t["id"] for t in everything
    ]
    assert reader.get("/api/tapes", kind="nanobot").json()["items"] == []


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"limit": 501}, 422),
        ({"limit": 0}, 422),
        ({"sort": "nope"}, 422),
        ({"kind": "nope"}, 422),
        ({"cursor": "not base64!"}, 422),
        ({"cursor": "eyJ4IjoxfQ"}, 400),  # {"x":1}: not a tape cursor
    ],
)
def test_bad_list_parameters_are_refused(reader, served, params, status) -> None:
    r = reader.get("/api/tapes", **params)
    assert r.status_code == status and "detail" in r.json()


def test_a_cursor_of_another_sort_is_400(reader, served) -> None:
    cursor = reader.get("/api/tapes", sort="label", limit=1).json()["next_cursor"]
    r = reader.get("/api/tapes", sort="-tokens", cursor=cursor)
    assert r.status_code == 400 and r.json() == {"detail": "this cursor belongs to another sort"}


@pytest.mark.parametrize(
    "key",
    [
        {"s": "-tokens", "v": "many", "id": 1},
        {"s": "-tokens", "v": 2**62 + 5, "id": 1},
        {"s": "last", "v": "not a date", "id": 1},
        {"s": "label", "v": ["x"], "id": 1},
        {"s": "label", "v": "x", "id": "1"},
    ],
)
def test_a_forged_cursor_is_400_never_a_crash(reader, served, key) -> None:
    r = reader.get("/api/tapes", sort=key["s"], cursor=cursor.encode(key))
    assert r.status_code == 400 and r.json() == {"detail": "this cursor is not one this API handed out"}


def test_a_tape_shows_its_attachments_and_whether_it_takes_a_handoff(reader, served) -> None:
    tape = reader.get(f"/api/tapes/{key('9d11f561157e98d3__f2234c5149b3f79d')}").json()
    assert tape["handoff"] is True and tape["handoff_refusal"] == ""
    assert {a["role"] for a in tape["attachments"]} == {"archive"}


def test_an_unknown_tape_is_404(reader, served) -> None:
    for tape_id in ("0000000000000000", "not-a-key", "x" * 40):
        r = reader.get(f"/api/tapes/{tape_id}")
        assert r.status_code == 404 and r.json() == {"detail": "no such tape"}
    assert reader.get("/api/tapes/0000000000000000/entries").status_code == 404


def test_a_tape_deleted_under_us_is_404_saying_its_file_is_gone(reader, served) -> None:
    k = key("fork_merged")
    (served["samples"] / "fork_merged.jsonl").unlink()
    for url in (f"/api/tapes/{k}", f"/api/tapes/{k}/entries", f"/api/tapes/{k}/entries/1/raw"):
        r = reader.get(url)
        assert r.status_code == 404 and r.json() == {"detail": "this tape's file is gone"}
