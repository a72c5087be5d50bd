"""The reviews API: recording, listing, export and import, with their status codes."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from tapeview.accounts.models import AuditEvent
from tapeview.reviews.models import Review

pytestmark = pytest.mark.django_db


def post(api, tape, **body):
    return api.post(f"/api/tapes/{tape.key}/reviews", body)


def export(api, tape) -> bytes:
    r = api.get(f"/api/tapes/{tape.key}/reviews/export")
    assert r.status_code == 200 and r["Content-Type"] == "application/x-ndjson"
    return b"".join(r.streaming_content)


def import_(api, data: bytes):
    return api.client.post(
        "/api/reviews/import", data, content_type="application/x-ndjson", headers=api.headers
    )


def test_a_review_is_created_with_201(writer, tape) -> None:
    r = post(writer, tape, pos=3, score=4, labels=["Slow"], comment="took a while")
    assert r.status_code == 201
    body = r.json()
    assert set(body) == {
        "id",
        "tape",
        "source",
        "pos",
        "span",
        "end",
        "content_hash",
        "score",
        "verdict",
        "labels",
        "comment",
        "author",
        "created_at",
        "supersedes",
        "superseded_by",
        "current",
        "orphaned",
    }
    assert (body["tape"], body["pos"], body["span"], body["end"]) == (tape.key, 3, "entry", 3)
    assert (body["score"], body["labels"], body["author"]) == (4, ["slow"], "token:writer")
    assert body["current"] and not body["orphaned"] and body["supersedes"] is None
    assert len(body["content_hash"]) == 64


def test_a_turn_review_that_ends_past_the_tape_is_400_and_names_it(writer, tape) -> None:
    r = post(writer, tape, pos=2, span="turn", end=999, score=2)
    assert r.status_code == 400 and "#999" in r.json()["detail"]
    assert writer.get("/api/reviews", tape=tape.key).json()["items"] == []
    assert post(writer, tape, pos=2, span="turn", end=4, score=2).status_code == 201


def test_a_correction_supersedes_and_the_history_stays(writer, tape) -> None:
    first = post(writer, tape, pos=3, score=2).json()
    second = post(writer, tape, pos=3, score=4, supersedes=first["id"]).json()
    assert second["supersedes"] == first["id"]
    items = writer.get("/api/reviews", tape=tape.key).json()["items"]
    assert [(i["score"], i["current"], i["superseded_by"]) for i in items] == [
        (4, True, None),
        (2, False, second["id"]),
    ]
    assert [i["score"] for i in writer.get("/api/reviews", current="true").json()["items"]] == [4]


@pytest.mark.parametrize(
    "body",
    [{"pos": 3, "score": 0}, {"pos": 3, "score": 6}, {"pos": 3, "labels": ["no spaces"]}, {"pos": 3}],
)
def test_a_review_that_cannot_be_is_400(writer, tape, body) -> None:
    r = post(writer, tape, **body)
    assert r.status_code == 400 and isinstance(r.json()["detail"], str)


@pytest.mark.parametrize("pos", [0, 7, 2**31, 2**70])
def test_a_review_of_no_entry_is_404(writer, tape, pos) -> None:
    assert post(writer, tape, pos=pos, score=3).status_code == 404


@pytest.mark.parametrize(
    "body", [{"pos": True, "score": 3}, {"pos": "3", "score": 3}, {"pos": 3, "score": True}]
)
def test_a_position_or_score_that_is_no_integer_is_422(writer, tape, body) -> None:
    assert writer.post(f"/api/tapes/{tape.key}/reviews", body).status_code == 422


def test_a_review_of_no_tape_is_404(writer, tape) -> None:
    r = writer.post("/api/tapes/nosuchtape/reviews", {"pos": 1, "score": 3})
    assert r.status_code == 404 and r.json() == {"detail": "no such tape"}


def test_superseding_a_superseded_review_or_another_target_is_409(writer, tape) -> None:
    first = post(writer, tape, pos=3, score=2).json()
    post(writer, tape, pos=3, score=4, supersedes=first["id"])
    again = post(writer, tape, pos=3, score=5, supersedes=first["id"])
    assert again.status_code == 409 and "superseded already" in again.json()["detail"]
    other = post(writer, tape, pos=2, score=5, supersedes=first["id"])
    assert other.status_code == 409 and "another target" in other.json()["detail"]


def test_a_read_token_cannot_review_or_import(reader, tape) -> None:
    r = post(reader, tape, pos=3, score=4)
    assert r.status_code == 403 and r.json() == {"detail": "this needs a token with write scope"}
    assert import_(reader, b"").status_code == 403
    assert not Review.objects.exists()


def test_reviews_are_listed_by_label_score_and_tape_a_page_at_a_time(writer, reader, tape) -> None:
    for pos, score, labels in [(2, 1, ["bad"]), (3, 5, ["good", "fast"]), (4, 5, ["good"]), (6, 3, [])]:
        assert post(writer, tape, pos=pos, score=score, labels=labels).status_code == 201
    assert [i["pos"] for i in reader.get("/api/reviews", label="good").json()["items"]] == [4, 3]
    assert [i["pos"] for i in reader.get("/api/reviews", score=5, label="fast").json()["items"]] == [3]
    assert reader.get("/api/reviews", tape="other").json() == {"items": [], "next_cursor": None}
    seen, cursor = [], None
    while True:
        page = reader.get("/api/reviews", limit=3, **({"cursor": cursor} if cursor else {})).json()
        seen += [i["pos"] for i in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [6, 4, 3, 2]
    assert reader.get("/api/reviews", score=9).status_code == 422
    assert reader.get("/api/reviews", cursor="eyJ4IjoxfQ").status_code == 400


def test_an_export_has_every_review_of_the_tape_history_included(writer, tape) -> None:
    first = post(writer, tape, pos=3, score=2).json()
    post(writer, tape, pos=3, score=4, supersedes=first["id"])
    post(writer, tape, pos=5, verdict="pass", span="phase")
    lines = [json.loads(line) for line in export(writer, tape).splitlines()]
    assert [(ln["pos"], ln["score"], ln["supersedes"]) for ln in lines] == [
        (3, 2, None),
        (3, 4, first["id"]),
        (5, None, None),
    ]
    assert {ln["source"] for ln in lines} == {"t"} and lines[0]["rel"] == tape.rel


def test_export_wipe_import_gives_the_same_reviews(writer, tape) -> None:
    first = post(writer, tape, pos=3, score=2, labels=["slow"], comment="多い").json()
    post(writer, tape, pos=3, score=4, supersedes=first["id"])
    post(writer, tape, pos=2, verdict="fail")
    before = export(writer, tape)
    listed = writer.get("/api/reviews", current="false").json()["items"]
    with connection.cursor() as cursor:  # a fresh database: the table emptied behind the model's back
        cursor.execute("DELETE FROM reviews_review")
    assert not Review.objects.exists()
    r = import_(writer, before)
    assert r.status_code == 201 and r.json() == {"created": 3, "skipped": 0}
    assert export(writer, tape) == before
    assert writer.get("/api/reviews", current="false").json()["items"] == listed
    assert AuditEvent.objects.filter(action="reviews.import").count() == 1


def test_importing_the_same_file_twice_adds_nothing(writer, tape) -> None:
    post(writer, tape, pos=3, score=2)
    data = export(writer, tape)
    assert import_(writer, data).json() == {"created": 0, "skipped": 1}
    assert import_(writer, data + data).json() == {"created": 0, "skipped": 2}
    assert Review.objects.count() == 1


def test_an_import_takes_corrections_in_any_order(writer, tape) -> None:
    first = post(writer, tape, pos=3, score=2).json()
    post(writer, tape, pos=3, score=4, supersedes=first["id"])
    lines = export(writer, tape).splitlines(keepends=True)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM reviews_review")
    assert import_(writer, b"".join(reversed(lines))).json() == {"created": 2, "skipped": 0}
    assert [r.current for r in Review.objects.linked().order_by("created_at")] == [False, True]


@pytest.mark.parametrize(
    ("mangle", "detail"),
    [
        (lambda ln: b"{not json\n", "line 1: not JSON"),
        (lambda ln: ln.replace(b'"score":2', b'"score":9'), "line 1: score"),
        (
            lambda ln: ln.replace(
                b'"supersedes":null', b'"supersedes":"00000000-0000-0000-0000-000000000001"'
            ),
            "neither here nor in the file",
        ),
    ],
)
def test_a_bad_import_is_400_and_imports_nothing(writer, tape, mangle, detail) -> None:
    post(writer, tape, pos=3, score=2)
    data = export(writer, tape)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM reviews_review")
    r = import_(writer, mangle(data))
    assert r.status_code == 400 and detail in r.json()["detail"]
    assert not Review.objects.exists()


def test_an_import_correcting_a_review_corrected_here_is_409(writer, tape) -> None:
    first = post(writer, tape, pos=3, score=2).json()
    second = post(writer, tape, pos=3, score=4, supersedes=first["id"]).json()
    theirs = (
        export(writer, tape)
        .splitlines()[1]
        .replace(second["id"].encode(), b"11111111-1111-1111-1111-111111111111")
    )
    r = import_(writer, theirs)
    assert r.status_code == 409 and Review.objects.count() == 2


def test_the_export_of_an_unknown_tape_is_404(reader, tape) -> None:
    assert reader.get("/api/tapes/nosuchtape/reviews/export").status_code == 404
    assert reader.get(f"/api/tapes/{tape.key}/reviews/export").status_code == 200


@pytest.mark.parametrize(
    ("body", "where"), [([], ["body"]), ({"pos": 3, "score": 2, "scroe": 4}, ["body", "scroe"])]
)
def test_a_body_that_is_no_object_or_has_an_unknown_field_is_422_and_nothing_is_recorded(
    writer, tape, body, where
) -> None:
    r = writer.post(f"/api/tapes/{tape.key}/reviews", body)
    assert r.status_code == 422 and [e["loc"] for e in r.json()["detail"]] == [where]
    assert not Review.objects.exists()
