"""The review queues API: its shapes, adding by hand and by a filter, and who may do what."""

from __future__ import annotations

import pytest

from tapeview.accounts.audit import Actor
from tapeview.accounts.models import AuditEvent
from tapeview.reviews import ledger, queues
from tapeview.reviews.models import Queue
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .conftest import tape_text

pytestmark = pytest.mark.django_db

ADMIN = Actor("ada")


@pytest.fixture
def queue(db) -> Queue:
    return queues.create("triage", "", ADMIN)


def test_queues_are_listed_with_their_progress(reader, user_factory, tape, queue) -> None:
    rita = user_factory("rita", "operator")
    queues.add(
        queue,
        [queues.target(tape.key, "entry", 2), queues.target(tape.key, "entry", 3)],
        ADMIN,
        reviewer=rita,
    )
    queues.add(queue, [queues.target(tape.key)], ADMIN)
    ledger.add(tape, 2, "rita", score=3)
    r = reader.get("/api/queues")
    assert r.status_code == 200
    (body,) = r.json()["items"]
    assert set(body) == {
        "id",
        "name",
        "description",
        "created_by",
        "created_at",
        "total",
        "done",
        "reviewers",
    }
    assert (body["id"], body["name"], body["created_by"]) == (queue.pk, "triage", "ada")
    assert (body["total"], body["done"]) == (3, 2)
    assert body["reviewers"] == [
        {"reviewer": "rita", "total": 2, "done": 1},
        {"reviewer": None, "total": 1, "done": 1},
    ]


def test_items_are_listed_in_order_with_done_and_gone(reader, tape_file, tape, queue) -> None:
    queues.add(queue, [queues.target(tape.key, "turn", 2, 4), queues.target(tape.key)], ADMIN)
    ledger.add(tape, 2, "rita", score=3, span="turn", end=4)
    first = reader.get(f"/api/queues/{queue.pk}/items").json()
    assert first["next_cursor"] is None
    turn, session = first["items"]
    assert set(turn) == {
        "id", "tape", "source", "label", "span", "pos", "end", "reviewer", "added_by", "added_at", "done", "gone",
    }  # fmt: skip
    assert (turn["span"], turn["pos"], turn["end"], turn["done"], turn["gone"]) == ("turn", 2, 4, True, False)
    assert (session["span"], session["pos"], session["done"], session["label"]) == (
        "session",
        None,
        True,
        "a__b",
    )

    tape_file.unlink()
    discovery.sync()
    after = reader.get(f"/api/queues/{queue.pk}/items")
    assert after.status_code == 200
    assert [i["gone"] for i in after.json()["items"]] == [True, True]


def test_items_page_with_a_cursor_and_filter_by_done(reader, tape, queue) -> None:
    queues.add(queue, [queues.target(tape.key, "entry", p) for p in (1, 2, 3)], ADMIN)
    ledger.add(tape, 3, "rita", score=3)
    page = reader.get(f"/api/queues/{queue.pk}/items", limit=2).json()
    assert [i["pos"] for i in page["items"]] == [1, 2]
    rest = reader.get(f"/api/queues/{queue.pk}/items", limit=2, cursor=page["next_cursor"]).json()
    assert [i["pos"] for i in rest["items"]] == [3] and rest["next_cursor"] is None
    open_items = reader.get(f"/api/queues/{queue.pk}/items", done="false").json()["items"]
    assert [i["pos"] for i in open_items] == [1, 2]


def test_a_write_token_adds_items_by_hand(writer, user_factory, tape, queue) -> None:
    user_factory("rita", "operator")
    body = {"items": [{"tape": tape.key, "span": "entry", "pos": 3}, {"tape": tape.key}], "reviewer": "rita"}
    r = writer.post(f"/api/queues/{queue.pk}/items", body)
    assert r.status_code == 201 and r.json() == {"added": 2, "skipped": 0}
    again = writer.post(f"/api/queues/{queue.pk}/items", body)
    assert again.json() == {"added": 0, "skipped": 2}
    assert set(queue.items.values_list("reviewer__username", "added_by")) == {("rita", "token:writer")}
    event = AuditEvent.objects.get(action="queue.add")
    assert event.actor == "token:writer" and event.detail["reviewer"] == "rita"


def test_a_write_token_adds_the_sessions_of_a_filter(writer, tape_file, queue) -> None:
    (tape_file.parent / "other__f.jsonl").write_text(tape_text())
    discovery.sync()
    r = writer.post(f"/api/queues/{queue.pk}/items", {"query": "?q=other"})
    assert r.status_code == 201 and r.json() == {"added": 1, "skipped": 0}
    assert list(queue.items.values_list("tape_key", flat=True)) == [Tape.objects.get(name="other__f").key]


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        ({}, 400, "name the items"),
        ({"items": [{"tape": "nosuch"}]}, 404, "no such tape"),
        ({"items": [{"tape": "KEY", "span": "entry"}]}, 400, "names its entry"),
        ({"items": [{"tape": "KEY", "span": "entry", "pos": 99}]}, 404, "no entry"),
        ({"items": [{"tape": "KEY", "span": "turn", "pos": 3, "end": 2}]}, 400, "pos <= end"),
        ({"items": [{"tape": "KEY"}], "reviewer": "nobody"}, 400, "no user"),
        ({"items": [{"tape": "KEY"}], "reviewer": "vera"}, 400, "operator role"),
        ({"items": [{"tape": "KEY", "span": "chapter"}]}, 422, "span"),
    ],
)
def test_items_that_cannot_be_added_say_why(writer, user_factory, tape, queue, body, status, said) -> None:
    user_factory("vera", "viewer")
    for item in body.get("items", []):
        item["tape"] = tape.key if item["tape"] == "KEY" else item["tape"]
    r = writer.post(f"/api/queues/{queue.pk}/items", body)
    assert r.status_code == status
    assert said in str(r.json()["detail"]).lower()
    assert not queue.items.exists()


def test_a_read_token_cannot_add_items_or_make_queues(reader, tape, queue) -> None:
    r = reader.post(f"/api/queues/{queue.pk}/items", {"items": [{"tape": tape.key}]})
    assert r.status_code == 403 and r.json()["detail"] == "this needs a token with write scope"
    assert reader.post("/api/queues", {"name": "mine"}).status_code == 403
    assert not queue.items.exists() and Queue.objects.count() == 1


def test_a_write_token_makes_a_queue_and_a_name_twice_is_a_400(writer) -> None:
    r = writer.post("/api/queues", {"name": "later", "description": "for next week"})
    assert r.status_code == 201
    assert (r.json()["name"], r.json()["total"], r.json()["reviewers"]) == ("later", 0, [])
    assert AuditEvent.objects.get(action="queue.create").actor == "token:writer"
    assert writer.post("/api/queues", {"name": "later"}).status_code == 400


@pytest.mark.parametrize(("role", "status"), [("viewer", 403), ("operator", 403), ("admin", 201)])
def test_signed_in_people_make_queues_as_admins_only(client, user_factory, role, status) -> None:
    client.force_login(user_factory("pat", role))
    r = client.post("/api/queues", {"name": "q"}, content_type="application/json")
    assert r.status_code == status


def test_a_signed_in_viewer_reads_but_does_not_add(client, user_factory, tape, queue) -> None:
    client.force_login(user_factory("vera", "viewer"))
    assert client.get("/api/queues").status_code == 200
    r = client.post(
        f"/api/queues/{queue.pk}/items", {"items": [{"tape": tape.key}]}, content_type="application/json"
    )
    assert r.status_code == 403 and r.json()["detail"] == "this needs the operator role"


def test_an_unknown_queue_is_a_404_and_no_caller_a_401(reader, anonymous) -> None:
    assert reader.get("/api/queues/999/items").status_code == 404
    assert anonymous.get("/api/queues").status_code == 401
