"""A review is a fact: saved once, never changed, never deleted."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from tapeview.reviews import ledger
from tapeview.reviews.models import AppendOnly, Review

pytestmark = pytest.mark.django_db


def test_a_saved_review_cannot_be_saved_again(tape) -> None:
    review = ledger.add(tape, 2, "olga", score=4)
    review.score = 5
    with pytest.raises(AppendOnly):
        review.save()
    with pytest.raises(AppendOnly):
        review.save(update_fields=["score"])
    assert Review.objects.get().score == 4


def test_a_loaded_review_cannot_be_saved_either(tape) -> None:
    ledger.add(tape, 2, "olga", comment="fine")
    review = Review.objects.get()
    review.comment = "edited"
    with pytest.raises(AppendOnly):
        review.save()
    assert Review.objects.get().comment == "fine"


def test_a_review_cannot_be_deleted(tape) -> None:
    review = ledger.add(tape, 2, "olga", verdict="pass")
    with pytest.raises(AppendOnly):
        review.delete()
    with pytest.raises(AppendOnly):
        Review.objects.filter(pk=review.pk).delete()
    assert Review.objects.count() == 1


@pytest.mark.parametrize(
    "change",
    [
        lambda qs: qs.update(score=1),
        lambda qs: qs.bulk_update(list(qs), ["score"]),
        lambda qs: qs.update_or_create(pk=qs.get().pk, defaults={"score": 1}),
    ],
)
def test_bulk_changes_are_refused(tape, change) -> None:
    ledger.add(tape, 2, "olga", score=4)
    with pytest.raises(AppendOnly):
        change(Review.objects.all())
    assert Review.objects.get().score == 4


def test_a_new_review_with_an_old_ones_pk_never_overwrites_it(tape) -> None:
    old = ledger.add(tape, 2, "olga", score=4)
    copy = Review(pk=old.pk, tape_key=old.tape_key, pos=3, content_hash="0" * 64, author="mallory", score=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        copy.save()
    assert Review.objects.get().author == "olga"


def test_the_database_refuses_a_score_outside_1_to_5(tape) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        Review(tape_key=tape.key, pos=2, content_hash="0" * 64, author="olga", score=6).save()
