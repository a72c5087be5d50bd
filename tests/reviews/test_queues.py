"""Review queues in the browser's pages: made, filled by hand and from a filter, assigned, worked through."""

from __future__ import annotations

from pathlib import Path

import pytest

from tapeview.accounts.audit import Actor
from tapeview.accounts.models import AuditEvent
from tapeview.reviews import ledger, queues
from tapeview.reviews.models import Queue, QueueItem
from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

from .conftest import tape_text

pytestmark = pytest.mark.django_db

ADMIN = Actor("ada")


@pytest.fixture
def three_tapes(tape_file: Path) -> list[Tape]:
    """a__b (from tape_file), c__d and e__f: the last one's label says 'other'."""
    (tape_file.parent / "c__d.jsonl").write_text(tape_text())
    (tape_file.parent / "other__f.jsonl").write_text(tape_text())
    discovery.sync()
    return list(Tape.objects.order_by("name"))


@pytest.fixture
def queue(db) -> Queue:
    return queues.create("triage", "the failed runs", ADMIN)


@pytest.fixture
def admin_client(client, user_factory):
    client.force_login(user_factory("ada", "admin"))
    return client


def test_an_admin_makes_a_queue_and_it_is_audited(admin_client) -> None:
    r = admin_client.post(
        "/reviews/queues/new", {"name": "triage", "description": "failed runs"}, follow=True
    )
    assert r.status_code == 200
    assert "Queue “triage” made." in r.content.decode()
    queue = Queue.objects.get(name="triage")
    event = AuditEvent.objects.get(action="queue.create")
    assert (event.actor, event.subject, event.target) == ("ada", f"queue:{queue.pk}", "triage")
    page = admin_client.get("/reviews/queues/").content.decode()
    assert "triage" in page and "0 / 0" in page


def test_a_second_queue_of_the_same_name_is_refused_with_400(admin_client, queue) -> None:
    r = admin_client.post("/reviews/queues/new", {"name": "triage"})
    assert r.status_code == 400
    assert "a queue named &#x27;triage&#x27; exists already" in r.content.decode()


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_only_admins_make_queues(client, user_factory, role) -> None:
    client.force_login(user_factory("vic", role))
    assert client.post("/reviews/queues/new", {"name": "mine"}).status_code == 403
    assert not Queue.objects.exists()


def test_an_operator_sends_an_entry_by_hand_from_the_timeline(operator_client, tape, queue) -> None:
    timeline = operator_client.get(f"/tapes/{tape.key}/").content.decode()
    link = f"/reviews/queues/send?tape={tape.key}&amp;pos=3"
    assert link in timeline
    assert f'/reviews/queues/send?tape={tape.key}"' in timeline  # the whole session
    form = operator_client.get(link.replace("&amp;", "&")).content.decode()
    assert "entry #3 of" in form and "Send 1 item" in form

    r = operator_client.post(
        "/reviews/queues/send", {"queue": queue.pk, "tape": tape.key, "pos": 3}, follow=True
    )
    assert "1 item sent to “triage”." in r.content.decode()
    item = QueueItem.objects.get()
    assert (item.tape_key, item.span, item.pos, item.end, item.added_by) == (tape.key, "entry", 3, 3, "olga")
    event = AuditEvent.objects.get(action="queue.add")
    assert event.detail["added"] == 1 and event.detail["items"] == [f"entry #3 of {tape.key}"]


def test_the_entry_page_offers_sending_it_to_a_queue(operator_client, tape) -> None:
    link = f"/reviews/queues/send?tape={tape.key}&amp;pos=2"
    assert link in operator_client.get(f"/tapes/{tape.key}/entries/2/").content.decode()


def test_a_viewer_sees_no_send_links_and_cannot_send(viewer_client, tape, queue) -> None:
    assert "/reviews/queues/send" not in viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    assert "/reviews/queues/send" not in viewer_client.get("/").content.decode()
    r = viewer_client.post("/reviews/queues/send", {"queue": queue.pk, "tape": tape.key})
    assert r.status_code == 403 and not QueueItem.objects.exists()


def test_a_turn_is_sent_with_its_last_entry(operator_client, tape, queue) -> None:
    body = {"queue": queue.pk, "tape": tape.key, "pos": 2, "span": "turn", "end": 4}
    operator_client.post("/reviews/queues/send", body)
    assert QueueItem.objects.values_list("span", "pos", "end").get() == ("turn", 2, 4)


@pytest.mark.parametrize(
    ("sent", "said"),
    [
        ({"pos": 99}, "no entry"),
        ({"pos": 2, "span": "turn"}, "names its last entry"),
        ({"pos": 4, "span": "turn", "end": 2}, "pos &lt;= end"),
    ],
)
def test_a_target_that_cannot_be_is_a_400_saying_why(operator_client, tape, queue, sent, said) -> None:
    r = operator_client.post("/reviews/queues/send", {"queue": queue.pk, "tape": tape.key, **sent})
    assert r.status_code == 400
    assert said in r.content.decode()
    assert not QueueItem.objects.exists()


def test_an_unknown_tape_is_a_400_not_a_500(operator_client, queue) -> None:
    r = operator_client.post("/reviews/queues/send", {"queue": queue.pk, "tape": "nosuchtape"})
    assert r.status_code == 400


def test_the_session_index_sends_the_sessions_of_its_filter(operator_client, three_tapes, queue) -> None:
    index = operator_client.get("/?q=other").content.decode()
    assert "Send this session to a review queue" in index
    assert "/reviews/queues/send?query=q%3Dother" in index
    everything = operator_client.get("/").content.decode()
    assert "Send these 3 sessions to a review queue" in everything

    form = operator_client.get("/reviews/queues/send?query=q%3D__").content.decode()
    assert "The 3 sessions the session index lists" in form
    r = operator_client.post("/reviews/queues/send", {"queue": queue.pk, "query": "q=other"}, follow=True)
    assert "1 item sent to “triage”." in r.content.decode()
    assert list(QueueItem.objects.values_list("label", "span", "pos")) == [("other__f", "session", None)]
    assert AuditEvent.objects.get(action="queue.add").detail["query"] == "q=other"

    again = operator_client.post("/reviews/queues/send", {"queue": queue.pk, "query": ""}, follow=True)
    assert "2 items sent to “triage” (1 in it already)." in again.content.decode()
    assert queue.items.count() == 3


def test_an_admin_assigns_the_unassigned_items(admin_client, user_factory, three_tapes, queue) -> None:
    rita = user_factory("rita", "operator")
    user_factory("vera", "viewer")
    queues.add(queue, [queues.Target(t) for t in three_tapes[:2]], ADMIN, reviewer=rita)
    queues.add(queue, [queues.Target(three_tapes[2])], ADMIN)
    page = admin_client.get(f"/reviews/queues/{queue.pk}/").content.decode()
    assert ">rita</option>" in page and ">vera</option>" not in page  # viewers review nothing

    ola = user_factory("ola", "operator")
    r = admin_client.post(
        f"/reviews/queues/{queue.pk}/assign", {"reviewer": ola.pk, "which": "unassigned"}, follow=True
    )
    assert "1 item assigned to ola." in r.content.decode()
    assert sorted(queue.items.values_list("reviewer__username", flat=True)) == ["ola", "rita", "rita"]
    event = AuditEvent.objects.get(action="queue.assign")
    assert event.detail == {"reviewer": "ola", "which": "unassigned", "items": 1}


def test_a_viewer_cannot_be_assigned_and_an_operator_cannot_assign(
    admin_client, client, user_factory, tape, queue
) -> None:
    vera = user_factory("vera", "viewer")
    queues.add(queue, [queues.Target(tape)], ADMIN)
    r = admin_client.post(f"/reviews/queues/{queue.pk}/assign", {"reviewer": vera.pk, "which": "open"})
    assert r.status_code == 400
    client.force_login(user_factory("olga", "operator"))
    assert (
        client.post(f"/reviews/queues/{queue.pk}/assign", {"reviewer": "", "which": "open"}).status_code
        == 403
    )
    with pytest.raises(queues.QueueRefused, match="holds the operator role"):
        queues.assign(queue, vera, ADMIN)


def test_progress_counts_done_items_per_reviewer(admin_client, user_factory, tape, queue) -> None:
    rita, ola = user_factory("rita", "operator"), user_factory("ola", "operator")
    queues.add(
        queue,
        [queues.target(tape.key, "entry", 2), queues.target(tape.key, "entry", 3)],
        ADMIN,
        reviewer=rita,
    )
    queues.add(queue, [queues.target(tape.key, "turn", 2, 4)], ADMIN, reviewer=ola)
    queues.add(queue, [queues.target(tape.key)], ADMIN)
    ledger.add(tape, 3, "rita", score=4)
    ledger.add(tape, 2, "ola", score=2, span="turn", end=4)  # the turn, not the entry #2

    p = queues.progress([queue])[queue.pk]
    assert (p.total, p.done) == (4, 3)  # the session counts: one of its entries is reviewed
    assert {n: (t.done, t.total) for n, t in p.reviewers.items()} == {
        "ola": (1, 1),
        "rita": (1, 2),
        "": (1, 1),
    }
    listed = admin_client.get("/reviews/queues/").content.decode()
    assert (
        "3 / 4" in listed
        and "rita 1 / 2" in listed
        and "ola 1 / 1" in listed
        and "unassigned 1 / 1" in listed
    )


def test_a_review_made_before_the_item_was_added_leaves_it_open(tape, queue) -> None:
    ledger.add(tape, 3, "rita", score=4)
    queues.add(queue, [queues.target(tape.key, "entry", 3)], ADMIN)
    assert queues.progress([queue])[queue.pk].done == 0


def test_a_reviewer_works_through_the_queue_with_next_and_previous(client, user_factory, tape, queue) -> None:
    rita = user_factory("rita", "operator")
    client.force_login(rita)
    targets = [queues.target(tape.key, "entry", p) for p in (2, 3, 4)]
    queues.add(queue, targets, ADMIN, reviewer=rita)
    first, second, third = queue.items.values_list("pk", flat=True)

    detail = client.get(f"/reviews/queues/{queue.pk}/").content.decode()
    assert f"/reviews/queues/{queue.pk}/items/{first}/?mine=1" in detail  # the next open item
    page = client.get(f"/reviews/queues/{queue.pk}/items/{first}/?mine=1").content.decode()
    assert "Item 1 of 3" in page and "list the files" in page
    assert f'href="/reviews/queues/{queue.pk}/items/{second}/?mine=1" rel="next"' in page
    assert 'rel="prev"' not in page

    r = client.post(
        f"/reviews/queues/{queue.pk}/items/{first}/review", {"score": "4", "labels": "ok", "mine": "1"}
    )
    assert r.status_code == 302 and r["Location"] == f"/reviews/queues/{queue.pk}/items/{second}/?mine=1"
    review = ledger.find(tape=tape.key, pos=2).get()
    assert (review.score, review.labels, review.author, review.span) == (4, ["ok"], "rita", "entry")

    page = client.get(r["Location"]).content.decode()
    assert "Item 2 of 3" in page and "three files" in page
    assert f'href="/reviews/queues/{queue.pk}/items/{first}/?mine=1" rel="prev"' in page
    client.post(f"/reviews/queues/{queue.pk}/items/{second}/review", {"verdict": "pass"})
    last = client.post(f"/reviews/queues/{queue.pk}/items/{third}/review", {"verdict": "fail"}, follow=True)
    assert "No open item is left after this one." in last.content.decode()
    assert "3 / 3" in last.content.decode()


def test_a_turn_item_is_reviewed_as_a_turn(operator_client, tape, queue) -> None:
    queues.add(queue, [queues.target(tape.key, "turn", 2, 4)], ADMIN)
    item = queue.items.get()
    page = operator_client.get(f"/reviews/queues/{queue.pk}/items/{item.pk}/").content.decode()
    assert "turn #2–#4" in page and "list the files" in page and "thanks" in page
    operator_client.post(f"/reviews/queues/{queue.pk}/items/{item.pk}/review", {"score": "5"})
    assert ledger.find(tape=tape.key).values_list("span", "pos", "end").get() == ("turn", 2, 4)
    assert queues.progress([queue])[queue.pk].done == 1


def test_a_session_item_is_reviewed_at_the_entry_given(operator_client, tape, queue) -> None:
    queues.add(queue, [queues.target(tape.key)], ADMIN)
    item = queue.items.get()
    operator_client.post(f"/reviews/queues/{queue.pk}/items/{item.pk}/review", {"comment": "fine", "at": "4"})
    assert ledger.find(tape=tape.key).values_list("pos", "comment").get() == (4, "fine")


def test_an_empty_review_is_a_400_with_the_form_again(operator_client, tape, queue) -> None:
    queues.add(queue, [queues.target(tape.key, "entry", 2)], ADMIN)
    item = queue.items.get()
    r = operator_client.post(f"/reviews/queues/{queue.pk}/items/{item.pk}/review", {})
    assert r.status_code == 400
    assert "a review needs a score, a verdict, a label or a comment" in r.content.decode()


def test_a_viewer_reads_a_queue_but_cannot_review_its_items(viewer_client, tape, queue) -> None:
    queues.add(queue, [queues.target(tape.key, "entry", 2)], ADMIN)
    item = queue.items.get()
    page = viewer_client.get(f"/reviews/queues/{queue.pk}/items/{item.pk}/").content.decode()
    assert "Reviewing needs the operator role." in page and "Save review" not in page
    r = viewer_client.post(f"/reviews/queues/{queue.pk}/items/{item.pk}/review", {"score": "3"})
    assert r.status_code == 403 and not ledger.find().exists()


def test_items_whose_tape_is_gone_stay_listed_as_gone(operator_client, tape_file, tape, queue) -> None:
    queues.add(queue, [queues.target(tape.key, "entry", 3), queues.target(tape.key)], ADMIN)
    tape_file.unlink()
    discovery.sync()
    detail = operator_client.get(f"/reviews/queues/{queue.pk}/")
    assert detail.status_code == 200
    assert detail.content.decode().count('<span class="badge gone"') == 2
    for item in queue.items.all():
        page = operator_client.get(f"/reviews/queues/{queue.pk}/items/{item.pk}/")
        assert page.status_code == 200
        assert "The item stays listed; nothing is left to review." in page.content.decode()
        r = operator_client.post(f"/reviews/queues/{queue.pk}/items/{item.pk}/review", {"score": "3"})
        assert r.status_code == 400 and "nothing is left to review" in r.content.decode()
        assert not ledger.find().exists()


def test_an_entry_no_longer_in_a_shrunk_tape_is_gone(operator_client, tape_file, tape, queue) -> None:
    queues.add(queue, [queues.target(tape.key, "entry", 6)], ADMIN)
    tape_file.write_text(tape_text().split("\n", 1)[0] + "\n")  # one entry left
    discovery.sync()
    item = queue.items.get()
    page = operator_client.get(f"/reviews/queues/{queue.pk}/items/{item.pk}/")
    assert page.status_code == 200 and "gone" in page.content.decode()


def test_an_admin_removes_an_item_and_it_is_audited(admin_client, tape, queue) -> None:
    queues.add(queue, [queues.target(tape.key)], ADMIN)
    item = queue.items.get()
    admin_client.post(f"/reviews/queues/{queue.pk}/items/{item.pk}/remove")
    assert not queue.items.exists()
    assert AuditEvent.objects.get(action="queue.remove").detail["tape"] == tape.key


@pytest.mark.parametrize("path", ["/reviews/queues/999/", "/reviews/queues/999/items/1/"])
def test_an_unknown_queue_or_item_is_a_404(viewer_client, path) -> None:
    assert viewer_client.get(path).status_code == 404


def test_a_target_with_a_pos_that_is_no_number_is_refused_not_read_as_the_session(
    operator_client, tape, queue
) -> None:
    r = operator_client.post("/reviews/queues/send", {"queue": queue.pk, "tape": tape.key, "pos": "three"})
    assert r.status_code == 400 and "check pos" in r.content.decode()
    assert not QueueItem.objects.exists()


def test_an_admin_removes_a_queue_and_its_reviews_stay(admin_client, tape, queue) -> None:
    queues.add(queue, [queues.target(tape.key, "entry", 2)], ADMIN)
    ledger.add(tape, 2, "rita", score=3)
    r = admin_client.post(f"/reviews/queues/{queue.pk}/delete", follow=True)
    assert "Queue “triage” removed; its reviews stay." in r.content.decode()
    assert not Queue.objects.exists() and not QueueItem.objects.exists()
    assert ledger.find().count() == 1
    assert AuditEvent.objects.get(action="queue.delete").detail == {"name": "triage", "items": 1}


def test_an_operator_cannot_remove_a_queue(operator_client, queue) -> None:
    assert operator_client.post(f"/reviews/queues/{queue.pk}/delete").status_code == 403
    assert Queue.objects.exists()


def test_the_audit_log_links_a_queue_change_to_its_queue(admin_client, queue) -> None:
    page = admin_client.get("/audit/").content.decode()
    assert "queue.create" in page and f'href="/reviews/queues/{queue.pk}/"' in page


def test_a_queue_lists_one_reviewers_items_and_a_hostile_name_lists_none(
    viewer_client, user_factory, tape, queue
) -> None:
    queues.add(queue, [queues.target(tape.key, "entry", 2)], ADMIN, reviewer=user_factory("rita", "operator"))
    queues.add(queue, [queues.target(tape.key, "entry", 3)], ADMIN)
    rita = viewer_client.get(f"/reviews/queues/{queue.pk}/", {"reviewer": "rita"}).content.decode()
    assert "entry #2" in rita and "entry #3" not in rita
    nobody = viewer_client.get(f"/reviews/queues/{queue.pk}/", {"reviewer": ""}).content.decode()
    assert "entry #3" in nobody and "entry #2" not in nobody
    hostile = viewer_client.get(f"/reviews/queues/{queue.pk}/", {"reviewer": "a\x00b", "page": "x"})
    assert hostile.status_code == 200 and "No items for this reviewer." in hostile.content.decode()
