"""The review pages: badges and the review control on the timeline, an entry's history, the review list."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tapeview.reviews import ledger
from tapeview.reviews.models import Review
from tapeview.tapes import discovery

from .conftest import tape_text

pytestmark = pytest.mark.django_db


def timeline(client, tape) -> str:
    r = client.get(f"/tapes/{tape.key}/")
    assert r.status_code == 200
    return r.content.decode()


def test_a_viewer_sees_reviews_on_the_timeline_but_no_review_control(viewer_client, tape) -> None:
    ledger.add(tape, 3, "olga", score=4, labels=["helpful"])
    html = timeline(viewer_client, tape)
    assert 'class="badge review"' in html and "★4 helpful" in html
    assert "1 current" in html
    assert "review_create" not in html and f"/tapes/{tape.key}/entries/3/reviews/new" not in html
    assert '<form method="post" action="/tapes/' not in html


def test_an_operator_gets_a_review_control_on_each_entry(operator_client, tape) -> None:
    html = timeline(operator_client, tape)
    for pos in range(1, 7):
        assert f'action="/tapes/{tape.key}/entries/{pos}/reviews/new"' in html
    assert html.count('<option value="phase">its phase</option>') == 2  # on each phase anchor


def test_an_operator_reviews_an_entry_from_the_timeline(operator_client, tape) -> None:
    r = operator_client.post(
        f"/tapes/{tape.key}/entries/3/reviews/new",
        {"score": "2", "verdict": "fail", "labels": "wrong-tool, Slow", "comment": "", "back": "timeline"},
    )
    assert r.status_code == 302 and r["Location"] == f"/tapes/{tape.key}/?at=3#e3"
    review = Review.objects.get()
    assert (review.score, review.verdict, review.labels, review.author) == (
        2,
        "fail",
        ["wrong-tool", "slow"],
        "olga",
    )
    html = timeline(operator_client, tape)
    assert "Review of #3 recorded." in html and "★2 fail wrong-tool slow" in html


def test_a_review_that_cannot_be_is_shown_with_its_reason(operator_client, tape) -> None:
    r = operator_client.post(f"/tapes/{tape.key}/entries/3/reviews/new", {"labels": "two words!"})
    assert r.status_code == 400 and "a label is at most" in r.content.decode()
    r = operator_client.post(f"/tapes/{tape.key}/entries/3/reviews/new", {"comment": ""})
    assert r.status_code == 400 and "a review needs a score" in r.content.decode()
    assert not Review.objects.exists()


def test_a_viewer_cannot_post_a_review(viewer_client, tape) -> None:
    r = viewer_client.post(f"/tapes/{tape.key}/entries/3/reviews/new", {"score": "5"})
    assert r.status_code == 403 and not Review.objects.exists()


def test_the_history_strikes_through_superseded_reviews(operator_client, tape) -> None:
    first = ledger.add(tape, 3, "olga", score=2, comment="too slow")
    r = operator_client.post(
        f"/tapes/{tape.key}/entries/3/reviews/new",
        {"score": "4", "comment": "fine on reflection", "supersedes": str(first.uid)},
    )
    assert r.status_code == 302 and r["Location"] == f"/tapes/{tape.key}/entries/3/reviews"
    html = operator_client.get(r["Location"]).content.decode()
    assert html.index("fine on reflection") < html.index("too slow")
    old = html[html.index(f'id="review-{first.uid}"') :]
    assert old.index("<del>") < old.index("too slow") < old.index("</del>") and "superseded" in old
    assert 'class="badge orphaned"' not in html
    # The form offers only the current review as the one to correct.
    assert f'value="{first.uid}"' not in html.split("<h2>Review this entry</h2>")[1]


def test_correcting_a_superseded_review_from_the_page_is_refused(operator_client, tape) -> None:
    first = ledger.add(tape, 3, "olga", score=2)
    ledger.add(tape, 3, "olga", score=3, supersedes=str(first.uid))
    r = operator_client.post(
        f"/tapes/{tape.key}/entries/3/reviews/new", {"score": "4", "supersedes": str(first.uid)}
    )
    assert r.status_code == 400 and Review.objects.count() == 2


def test_the_history_marks_reviews_orphaned_after_the_tape_is_replaced(
    viewer_client, tape, tape_file: Path
) -> None:
    ledger.add(tape, 3, "olga", score=5, comment="three files, correct")
    replacement = tape_file.with_name("new")
    replacement.write_text(tape_text(("list the files", "no files", "thanks")))
    os.replace(replacement, tape_file)
    discovery.sync()
    html = viewer_client.get(f"/tapes/{tape.key}/entries/3/reviews").content.decode()
    assert 'class="badge orphaned"' in html and "three files, correct" in html
    assert "· orphaned" in timeline(viewer_client, tape)
    assert "<h2>Review this entry</h2>" not in html  # a viewer


def test_the_history_of_a_tape_gone_from_the_index_still_shows_its_reviews(
    viewer_client, tape, tape_file: Path
) -> None:
    ledger.add(tape, 3, "olga", score=5, comment="kept")
    tape_file.unlink()
    discovery.sync()
    r = viewer_client.get(f"/tapes/{tape.key}/entries/3/reviews")
    assert r.status_code == 200 and "kept" in r.content.decode() and "not in the index" in r.content.decode()
    assert viewer_client.get(f"/tapes/{tape.key}/entries/4/reviews").status_code == 404


def test_the_review_list_filters_by_label_score_and_tape(viewer_client, tape) -> None:
    ledger.add(tape, 2, "olga", score=1, labels=["bad-start"], comment="c-two")
    ledger.add(tape, 3, "olga", score=5, labels=["helpful"], comment="c-three")
    html = viewer_client.get("/reviews/", {"label": "helpful"}).content.decode()
    assert "c-three" in html and "c-two" not in html and "Sessions with these reviews" in html
    html = viewer_client.get("/reviews/", {"score": "1"}).content.decode()
    assert "c-two" in html and "c-three" not in html
    html = viewer_client.get("/reviews/", {"tape": "elsewhere"}).content.decode()
    assert "No reviews match." in html and "No session has reviews like these." in html
    partial = viewer_client.get(
        "/reviews/", {"label": "helpful"}, headers={"HX-Request": "true"}
    ).content.decode()
    assert partial.lstrip().startswith('<div id="results">') and "c-three" in partial


def test_the_review_list_takes_bad_filters_as_none(viewer_client, tape) -> None:
    ledger.add(tape, 2, "olga", score=1)
    r = viewer_client.get("/reviews/", {"score": "9", "state": "nope", "page": "x", "label": "a\x00"})
    assert r.status_code == 200


def test_an_unfinished_last_line_gets_no_review_control(operator_client, tape, tape_file: Path) -> None:
    with tape_file.open("a") as f:
        f.write('{"id": 7, "kind": "message", "payload": {"role": "user", "con')
    html = timeline(operator_client, tape)
    assert 'id="e7"' in html  # shown at the end, not indexed yet
    assert f"/tapes/{tape.key}/entries/6/reviews/new" in html
    assert f"/tapes/{tape.key}/entries/7/reviews/new" not in html


@pytest.mark.parametrize("key", ["no-such-tape", "a" * 33, "nosuchtape"])
def test_the_history_of_no_tape_is_404(viewer_client, tape, key: str) -> None:
    assert viewer_client.get(f"/tapes/{key}/entries/3/reviews").status_code == 404
