"""Recording reviews: the entry's hash, corrections that supersede, and orphans after a rewrite."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tapeview.reviews import ledger
from tapeview.reviews.models import Review
from tapeview.tapes import discovery, lookup, rows
from tapeview.tapes.models import Tape

from .conftest import tape_text

pytestmark = pytest.mark.django_db


def shown(review: Review) -> Review:
    return ledger.mark([Review.objects.linked().get(pk=review.pk)])[0]


def test_a_review_keeps_the_sha256_of_the_entrys_bytes(tape, tape_file: Path) -> None:
    review = ledger.add(tape, 3, "olga", score=4, labels=["Slow", "slow", "wrong-tool"], comment="late")
    line = tape_file.read_bytes().splitlines(keepends=True)[2]
    row = rows.at(tape, 3)
    assert (
        review.content_hash
        == hashlib.sha256(tape_file.read_bytes()[row.offset : row.offset + row.length]).hexdigest()
    )
    assert line.startswith(tape_file.read_bytes()[row.offset : row.offset + row.length])
    assert (review.tape_key, review.source, review.rel) == (tape.key, "t", tape.rel)
    assert (review.span, review.end, review.labels, review.author) == (
        "entry",
        3,
        ["slow", "wrong-tool"],
        "olga",
    )
    assert shown(review).current and not shown(review).orphaned


def test_corrections_form_a_chain_with_one_current_review(tape) -> None:
    first = ledger.add(tape, 2, "olga", score=2)
    second = ledger.add(tape, 2, "olga", score=3, supersedes=str(first.uid))
    third = ledger.add(tape, 2, "vera", score=4, supersedes=str(second.uid))
    chain = {r.uid: r for r in Review.objects.linked()}
    assert [chain[r.uid].current for r in (first, second, third)] == [False, False, True]
    assert chain[second.uid].supersedes_uid == first.uid and chain[second.uid].superseded_by_uid == third.uid
    assert [r.score for r in ledger.find(tape=tape.key, pos=2, current=True)] == [4]
    assert [r.score for r in ledger.find(tape=tape.key, pos=2)] == [4, 3, 2]  # the history stays


def test_a_review_is_superseded_at_most_once(tape) -> None:
    first = ledger.add(tape, 2, "olga", score=2)
    ledger.add(tape, 2, "olga", score=3, supersedes=str(first.uid))
    with pytest.raises(ledger.ReviewConflict, match="superseded already"):
        ledger.add(tape, 2, "vera", score=5, supersedes=str(first.uid))
    assert Review.objects.count() == 2


@pytest.mark.parametrize(("pos", "span", "end"), [(3, "entry", None), (2, "turn", 4)])
def test_a_correction_reviews_the_same_target(tape, pos: int, span: str, end: int | None) -> None:
    first = ledger.add(tape, 2, "olga", score=2)
    with pytest.raises(ledger.ReviewConflict, match="another target"):
        ledger.add(tape, pos, "olga", score=3, span=span, end=end, supersedes=str(first.uid))


@pytest.mark.parametrize("review_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_superseding_an_unknown_review_is_not_found(tape, review_id: str) -> None:
    with pytest.raises(ledger.NoSuchReview):
        ledger.add(tape, 2, "olga", score=3, supersedes=review_id)


@pytest.mark.parametrize(
    "review",
    [
        {"score": 0},
        {"score": 6},
        {"verdict": "maybe"},
        {"labels": ["two words"]},
        {"labels": ["x" * 41]},
        {"labels": [f"l{n}" for n in range(11)]},
        {"comment": "   "},
        {},
        {"score": 3, "span": "turn"},
        {"score": 3, "span": "turn", "end": 1},
        {"score": 3, "span": "phase"},  # #2 is a message, not a phase anchor
        {"score": 3, "span": "entry", "end": 4},
        {"score": 3, "span": "chapter"},
    ],
)
def test_a_review_that_cannot_be_is_refused(tape, review: dict) -> None:
    with pytest.raises(ledger.ReviewRefused):
        ledger.add(tape, 2, "olga", **review)
    assert not Review.objects.exists()


def test_a_review_of_a_missing_entry_is_not_found(tape) -> None:
    with pytest.raises(lookup.NoSuchEntry):
        ledger.add(tape, 99, "olga", score=3)


def test_a_phase_review_ends_before_the_next_phase(tape) -> None:
    assert ledger.add(tape, 1, "olga", verdict="pass", span="phase").end == 4
    assert ledger.add(tape, 5, "olga", verdict="fail", span="phase").end is None  # the last phase is open


def test_a_review_is_orphaned_once_the_tape_file_is_replaced(tape, tape_file: Path) -> None:
    review = ledger.add(tape, 3, "olga", score=5, labels=["helpful"])
    kept = ledger.add(tape, 2, "olga", score=4)
    # The agent resets the tape: a new file whose #3 says something else.
    replacement = tape_file.with_name("new")
    replacement.write_text(tape_text(("list the files", "no files at all", "thanks")))
    os.replace(replacement, tape_file)
    discovery.sync()
    assert shown(review).orphaned and shown(review).current
    assert not shown(kept).orphaned  # #2 has the same bytes as before


def test_a_review_is_orphaned_when_its_entry_is_gone(tape, tape_file: Path) -> None:
    review = ledger.add(tape, 6, "olga", score=5)
    tape_file.unlink()
    tape_file.write_text(tape_text().split("\n", 1)[0] + "\n")
    discovery.sync()
    assert shown(review).orphaned
    tape_file.unlink()
    discovery.sync()
    assert not Tape.objects.exists() and shown(review).orphaned


def test_a_review_survives_a_rebuilt_index(tape) -> None:
    review = ledger.add(tape, 3, "olga", score=5)
    Tape.objects.all().delete()  # the index is derived: deleting it loses no review
    discovery.sync()
    assert Tape.objects.get().key == review.tape_key
    assert not shown(review).orphaned


def test_reviews_are_found_by_label_score_and_tape(tape) -> None:
    ledger.add(tape, 2, "olga", score=2, labels=["slow", "wrong-tool"])
    ledger.add(tape, 3, "olga", score=5, labels=["slowish"])
    assert [r.pos for r in ledger.find(label="slow")] == [2]
    assert [r.pos for r in ledger.find(label="SLOW ")] == [2]
    assert [r.pos for r in ledger.find(label="slow wrong-tool")] == []  # one label, not a run of them
    assert [r.pos for r in ledger.find(score=5, tape=tape.key)] == [3]
    assert [r.pos for r in ledger.find(tape="elsewhere")] == []
    (reviewed,) = ledger.reviewed_tapes(ledger.find(label="slow"))
    assert (reviewed.tape, reviewed.reviews) == (tape, 1)
